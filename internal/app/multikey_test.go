package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/service"
)

// threeKeys is one agent's block: a write key in each of three projects
// (two workspaces), each key with its own agent name.
type threeKeys struct {
	projects []string // "workspace/project", in the order of the header
	agents   []string // the agent name of each key
	tokens   []string // the keys, in the same order
	ids      []int64  // their ids, for revocation
	header   string   // "munin_a,munin_b,munin_c"
}

func createThreeKeys(t *testing.T, a *App) threeKeys {
	t.Helper()
	var k threeKeys
	for i, ref := range []memory.ProjectRef{
		{Workspace: "team", Project: "shared"},
		{Workspace: "team", Project: "backend"},
		{Workspace: "ops", Project: "runbooks"},
	} {
		agent := []string{"sam-shared", "sam-backend", "sam-ops"}[i]
		tok, key, err := a.Svc.CreateKey(context.Background(), ref, agent, memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		k.projects, k.agents = append(k.projects, ref.String()), append(k.agents, agent)
		k.tokens, k.ids = append(k.tokens, tok), append(k.ids, key.ID)
	}
	k.header = strings.Join(k.tokens, ",")
	return k
}

// connectInit opens one MCP session (protocol 2025-11-25: initialize and a
// session id, as most clients do today) and returns the initialize answer.
func connectInit(t *testing.T, base, token string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "app-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.GetSessionId() == "" {
		t.Fatal("initialize opened no session")
	}
	return c, res
}

// TestOneAgentThreeProjectsInOneMCPSession: one MCP block with keys for
// three projects reaches all three in one session — remember and get name
// the project, recall without one searches all three and says where each
// hit lives, role and agent come from the target project's key, and a
// project without a key is forbidden.
func TestOneAgentThreeProjectsInOneMCPSession(t *testing.T) {
	a, base, _ := startServer(t)
	k := createThreeKeys(t, a)
	c, init := connectInit(t, base, k.header)
	session := c.GetSessionId()

	// The initialize answer names what the caller reaches.
	for i, p := range k.projects {
		if !strings.Contains(init.Instructions, p) || !strings.Contains(init.Instructions, k.agents[i]) {
			t.Errorf("initialize instructions do not name %s (%s):\n%s", p, k.agents[i], init.Instructions)
		}
	}

	// The same slug in each project, each with the shared word "kompass"
	// and one word of its own.
	own := []string{"leuchtturm", "maschinenraum", "nachtwache"}
	for i, p := range k.projects {
		var w service.WriteResult
		if text, isErr := call(t, c, "remember", map[string]any{"project": p, "slug": "notes/plan",
			"content": "Der kompass zeigt zum " + own[i] + "."}, &w); isErr {
			t.Fatalf("remember into %s: %s", p, text)
		}
		if w.Project != p || w.Slug != "notes/plan" || w.Version != 1 {
			t.Fatalf("remember into %s = %+v, want project %s, version 1", p, w, p)
		}
	}

	// recall without project: one list, a hit in every project, each with its project.
	var all service.RecallResult
	if text, isErr := call(t, c, "recall", map[string]any{"query": "kompass"}, &all); isErr {
		t.Fatalf("recall across projects: %s", text)
	}
	var got []string
	for _, h := range all.Hits {
		if h.Slug != "notes/plan" {
			t.Errorf("recall hit %+v, want notes/plan", h)
		}
		i := slices.Index(k.projects, h.Project)
		if i < 0 || !strings.Contains(h.Snippet, own[i]) {
			t.Errorf("recall hit in %q with snippet %q: not that project's entry", h.Project, h.Snippet)
		}
		got = append(got, h.Project)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(k.projects))
	if !slices.Equal(got, want) {
		t.Fatalf("recall without project found projects %v, want %v", got, want)
	}

	// recall with project searches that one only.
	var one service.RecallResult
	call(t, c, "recall", map[string]any{"query": "kompass", "project": k.projects[1]}, &one)
	if len(one.Hits) != 1 || one.Hits[0].Project != k.projects[1] {
		t.Fatalf("recall in %s = %+v, want its one hit", k.projects[1], one.Hits)
	}
	// A word of one project's entry finds nothing of the others.
	var own2 service.RecallResult
	call(t, c, "recall", map[string]any{"query": own[2]}, &own2)
	if len(own2.Hits) != 1 || own2.Hits[0].Project != k.projects[2] {
		t.Fatalf("recall %q = %+v, want the one hit in %s", own[2], own2.Hits, k.projects[2])
	}

	// get with project reads that project's version, written by that key's agent.
	for i, p := range k.projects {
		var e service.Entry
		if text, isErr := call(t, c, "get", map[string]any{"project": p, "slug": "notes/plan"}, &e); isErr {
			t.Fatalf("get in %s: %s", p, text)
		}
		if e.Project != p || !strings.Contains(e.Content, own[i]) || e.Agent != k.agents[i] {
			t.Errorf("get in %s = project %q, agent %q, content %q; want its own entry by %s", p, e.Project, e.Agent, e.Content, k.agents[i])
		}
	}
	// Without project, get acts in the first key's project.
	var first service.Entry
	call(t, c, "get", map[string]any{"slug": "notes/plan"}, &first)
	if first.Project != k.projects[0] || !strings.Contains(first.Content, own[0]) {
		t.Errorf("get without project = %+v, want the first key's project %s", first, k.projects[0])
	}

	// A project the caller holds no key for is forbidden, whether it exists
	// or not — default/default exists (the bootstrap key's), acme/x does not.
	for _, p := range []string{"default/default", "acme/x"} {
		for tool, args := range map[string]map[string]any{
			"get":      {"project": p, "slug": "notes/plan"},
			"remember": {"project": p, "slug": "notes/plan", "content": "x"},
			"recall":   {"project": p, "query": "kompass"},
		} {
			text, isErr := call(t, c, tool, args, nil)
			if !isErr || text != "forbidden: no key for project "+p {
				t.Errorf("%s in %s = %q (isError %v), want forbidden: no key for project %s", tool, p, text, isErr, p)
			}
		}
	}
	if got := c.GetSessionId(); got != session {
		t.Fatalf("the calls ran in session %q, then %q: want one session", session, got)
	}
}

// TestRevokingOneOfThreeKeysRefusesTheNextCall: revoking one key of an MCP
// block makes the very next request with that block a 401 naming the key's
// position — on the open session, a new one and REST alike — while the
// other keys keep working. Revoked by another process on the same data
// directory (munin key revoke while the server runs) it is refused too,
// after the key cache's recheck.
func TestRevokingOneOfThreeKeysRefusesTheNextCall(t *testing.T) {
	a, base, _ := startServer(t)
	k := createThreeKeys(t, a)
	c, _ := connectInit(t, base, k.header)
	call(t, c, "remember", map[string]any{"project": k.projects[2], "slug": "a", "content": "before the revocation"}, nil)

	if err := a.Svc.RevokeKey(context.Background(), k.ids[1]); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "recall", map[string]any{"query": "revocation"}
	if res, err := c.CallTool(context.Background(), req); !errors.Is(err, transport.ErrAuthorizationRequired) {
		t.Fatalf("the open session's next call after revoking key 2: %+v, %v; want 401 unauthorized", res, err)
	}
	for _, path := range []string{"/mcp", "/api/v1/me"} {
		status, auth, body := sendWithKeys(t, base, path, k.header)
		if status != http.StatusUnauthorized || !strings.HasPrefix(auth, "Bearer") || !strings.Contains(body, "key 2 of 3 is unknown or revoked") {
			t.Errorf("%s after revoking key 2: status %d, WWW-Authenticate %q, body %s; want 401 naming key 2 of 3", path, status, auth, body)
		}
		for _, p := range k.projects {
			if strings.Contains(body, p) {
				t.Errorf("%s: the 401 names project %s: %s", path, p, body)
			}
		}
	}

	// The two keys left still work together, in a new session.
	rest := k.tokens[0] + "," + k.tokens[2]
	c2, _ := connectInit(t, base, rest)
	var e service.Entry
	if text, isErr := call(t, c2, "get", map[string]any{"project": k.projects[2], "slug": "a"}, &e); isErr || e.Project != k.projects[2] {
		t.Fatalf("get with the two live keys = %+v, %s", e, text)
	}

	// Another process revokes key 3 on the same data directory: the
	// server's key cache notices within its recheck interval. The loop is
	// bounded; it asserts that the refusal comes, not how fast.
	other, err := Open(Config{IndexPersistNap: testPersistNap, Config: config.Config{Storage: config.Storage{DataDir: a.cfg.Storage.DataDir}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	err = other.Svc.RevokeKey(context.Background(), k.ids[2])
	if cerr := other.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	status, body := 0, ""
	for range 200 {
		if status, _, body = sendWithKeys(t, base, "/api/v1/me", rest); status == http.StatusUnauthorized {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status != http.StatusUnauthorized || !strings.Contains(body, "key 2 of 2 is unknown or revoked") {
		t.Fatalf("after another process revoked key 3: status %d, %s; want 401 naming key 2 of 2", status, body)
	}
}

// sendWithKeys sends a request a client with the key list would send first
// (initialize for /mcp, GET otherwise) and returns status,
// WWW-Authenticate and body.
func sendWithKeys(t *testing.T, base, path, keys string) (int, string, string) {
	t.Helper()
	method, body := http.MethodGet, ""
	if path == "/mcp" {
		method, body = http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keys)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestOneAgentThreeProjectsOverREST: the same key list works for /api/v1 —
// /me names the three projects, remember and get take project, recall
// without project finds the hits of all three.
func TestOneAgentThreeProjectsOverREST(t *testing.T) {
	a, base, _ := startServer(t)
	k := createThreeKeys(t, a)
	rest := func(method, path, body string, out any) {
		t.Helper()
		req, err := http.NewRequest(method, base+"/api/v1"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// Spaces around the commas are tolerated.
		req.Header.Set("Authorization", "Bearer "+strings.Join(k.tokens, " , "))
		req.Header.Set("Content-Type", "application/json")
		status, answer := do(t, req)
		if status/100 != 2 {
			t.Fatalf("%s %s: status %d: %s", method, path, status, answer)
		}
		if err := json.Unmarshal([]byte(answer), out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, answer)
		}
	}

	var me service.Me
	rest("GET", "/me", "", &me)
	var reached []string
	for _, p := range me.Projects {
		reached = append(reached, p.Project)
	}
	if !slices.Equal(reached, k.projects) {
		t.Fatalf("/me = %+v, want the projects %v in key order", me, k.projects)
	}
	for _, p := range k.projects {
		var w service.WriteResult
		rest("POST", "/entries", `{"project":"`+p+`","slug":"notes/plan","content":"Der kompass von `+p+`"}`, &w)
		if w.Project != p || w.Version != 1 {
			t.Fatalf("remember into %s = %+v", p, w)
		}
	}
	var all service.RecallResult
	rest("GET", "/recall?q=kompass", "", &all)
	var got []string
	for _, h := range all.Hits {
		got = append(got, h.Project)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(k.projects)); !slices.Equal(got, want) {
		t.Fatalf("recall without project found projects %v, want %v", got, want)
	}
	var e service.Entry
	rest("GET", "/entries/notes/plan?project="+k.projects[2], "", &e)
	if e.Project != k.projects[2] || e.Content != "Der kompass von "+k.projects[2] || e.Agent != k.agents[2] {
		t.Fatalf("get in %s = %+v", k.projects[2], e)
	}
}
