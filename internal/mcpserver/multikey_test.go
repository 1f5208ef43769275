package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// stdioClient serves srv over pipes with tokens and returns an initialized
// mcp-go client and its initialize answer; the test's end stops both.
func stdioClient(t *testing.T, srv *Server, tokens string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(context.Background(), tokens, inR, outW)
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after its input closed")
		}
		c.Close()
	})
	return c, initialize(t, c)
}

func listTools(t *testing.T, c *client.Client) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	raw, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// initInstructions decodes the instructions of a JSON-RPC initialize answer.
func initInstructions(t *testing.T, answer string) string {
	t.Helper()
	var msg struct {
		Result struct {
			Instructions string `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &msg); err != nil {
		t.Fatalf("initialize answer %q: %v", answer, err)
	}
	return msg.Result.Instructions
}

// TestInitializeNamesProjects: the instructions name every project of the
// caller's keys with role and agent, the first key's marked as the default
// — over HTTP with a two-key Authorization header and over stdio, in the
// initialize answer (protocol 2025-06-18) and in server/discover's
// (2026-07-28, what mcp-go's client asks first) — while tools/list is the
// same for every caller.
func TestInitializeNamesProjects(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, _ := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	tokB, _ := h.env.Key(t, "ws", "beta", "bob", memory.RoleRead)
	const (
		alphaDefault = "\n- ws/alpha (write, alice) — the default"
		beta         = "\n- ws/beta (read, bob)"
		betaDefault  = "\n- ws/beta (read, bob) — the default"
		alpha        = "\n- ws/alpha (write, alice)"
	)
	check := func(name, got string, want []string, not string) {
		t.Helper()
		if !strings.HasPrefix(got, instructions+"\nYour projects (role, agent):") {
			t.Errorf("%s: instructions do not start with the static text and the list: %q", name, got)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: instructions lack %q:\n%s", name, w, got)
			}
		}
		if not != "" && strings.Contains(got, not) {
			t.Errorf("%s: instructions name %q:\n%s", name, not, got)
		}
	}
	one, oneInit := connectInit(t, h.url, tokA)
	check("one key", oneInit.Instructions, []string{alphaDefault}, "ws/beta")
	two, twoInit := connectInit(t, h.url, tokA+" , "+tokB)
	check("two keys", twoInit.Instructions, []string{alphaDefault, beta}, betaDefault)
	_, revInit := connectInit(t, h.url, tokB+","+tokA)
	check("two keys, the other first", revInit.Instructions, []string{betaDefault, alpha}, alphaDefault)
	if twoInit.ProtocolVersion != mcp.LATEST_PROTOCOL_VERSION {
		t.Logf("the client negotiated %s, not server/discover", twoInit.ProtocolVersion)
	}
	raw := (&sessHarness{url: h.url}).send(t, "POST", tokA+","+tokB, "", initBody)
	check("two keys, initialize over HTTP", initInstructions(t, raw.body), []string{alphaDefault, beta}, betaDefault)

	if l1, l2 := listTools(t, one), listTools(t, two); string(l1) != string(l2) {
		t.Errorf("tools/list differs between a one-key and a two-key caller:\n%s\n%s", l1, l2)
	}

	srv := New(h.env.Svc, Options{ValidateOutput: true, Logger: testLogger(t)})
	// One stdio server at a time per process: each ends with its subtest.
	t.Run("stdio discover", func(t *testing.T) {
		_, stdioInit := stdioClient(t, srv, tokA+","+tokB)
		check("stdio, two keys", stdioInit.Instructions, []string{alphaDefault, beta}, betaDefault)
	})
	t.Run("stdio initialize", func(t *testing.T) {
		s := startStdio(t, srv, tokB+","+tokA)
		check("stdio, two keys, initialize", initInstructions(t, s.init), []string{betaDefault, alpha}, alphaDefault)
	})
}

// TestProjectArgument: with several keys, remember, forget, get, history and
// list without project act in the first key's project and recall searches
// them all; with project they act there, with that key's role and agent.
// Every result names its project. A project the caller holds no key for is
// forbidden in the same words whether it exists or not, a malformed one is
// invalid naming project, and neither changes anything.
func TestProjectArgument(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, _ := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	tokB, _ := h.env.Key(t, "ws", "beta", "bob", memory.RoleWrite)
	tokD, _ := h.env.Key(t, "ws", "delta", "carol", memory.RoleRead)
	tokG, _ := h.env.Key(t, "ws", "gamma", "dave", memory.RoleWrite) // not the caller's
	gamma := h.client(t, tokG)
	callOK[service.WriteResult](t, gamma, "remember", map[string]any{"slug": "notes/a", "content": "gamma text plum"})
	c := h.client(t, tokA+","+tokB+","+tokD)

	if r, _ := callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "notes/a", "content": "alpha text plum"}); r.Project != "ws/alpha" || r.Version != 1 {
		t.Fatalf("remember without project: %+v, want v1 in ws/alpha (the first key's)", r)
	}
	if r, text := callOK[service.WriteResult](t, c, "remember", map[string]any{"project": "ws/beta", "slug": "notes/b", "content": "beta text plum"}); r.Project != "ws/beta" || r.Version != 1 || !strings.HasSuffix(text, " in ws/beta") {
		t.Fatalf("remember in ws/beta: %+v %q", r, text)
	}
	if msg := callErr(t, c, "remember", map[string]any{"project": "ws/delta", "slug": "notes/d", "content": "x"}); !strings.HasPrefix(msg, "forbidden: ") {
		t.Fatalf("remember with the read key's project: %q", msg)
	}
	if e, _ := callOK[service.Entry](t, c, "get", map[string]any{"slug": "notes/a"}); e.Project != "ws/alpha" || e.Agent != "alice" || e.Content != "alpha text plum" {
		t.Fatalf("get without project: %+v", e)
	}
	if e, _ := callOK[service.Entry](t, c, "get", map[string]any{"project": "ws/beta", "slug": "notes/b"}); e.Project != "ws/beta" || e.Agent != "bob" {
		t.Fatalf("get in ws/beta: %+v, want agent bob (the beta key's)", e)
	}
	if msg := callErr(t, c, "get", map[string]any{"slug": "notes/b"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("get of a beta slug without project: %q, want not_found (it acts in ws/alpha)", msg)
	}

	rec, text := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "plum"})
	got := map[string]string{}
	for _, hit := range rec.Hits {
		got[hit.Project] = hit.Slug
	}
	if len(rec.Hits) != 2 || got["ws/alpha"] != "notes/a" || got["ws/beta"] != "notes/b" {
		t.Fatalf("recall without project: %+v, want notes/a in ws/alpha and notes/b in ws/beta, nothing of ws/gamma", rec.Hits)
	}
	if !strings.Contains(text, "(ws/alpha)") || !strings.Contains(text, "(ws/beta)") {
		t.Errorf("recall text does not name the projects: %q", text)
	}
	if rec, _ := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "plum", "project": "ws/beta"}); len(rec.Hits) != 1 || rec.Hits[0].Project != "ws/beta" {
		t.Fatalf("recall in ws/beta: %+v", rec.Hits)
	}

	listIn := func(project string) []service.ListEntry {
		t.Helper()
		args := map[string]any{}
		if project != "" {
			args["project"] = project
		}
		l, _ := callOK[service.ListResult](t, c, "list", args)
		return l.Entries
	}
	if l := listIn(""); len(l) != 1 || l[0].Project != "ws/alpha" || l[0].Slug != "notes/a" {
		t.Fatalf("list without project: %+v", l)
	}
	if l := listIn("ws/beta"); len(l) != 1 || l[0].Project != "ws/beta" || l[0].Slug != "notes/b" {
		t.Fatalf("list in ws/beta: %+v", l)
	}
	if hist, _ := callOK[service.HistoryResult](t, c, "history", map[string]any{"project": "ws/beta", "slug": "notes/b"}); hist.Project != "ws/beta" || len(hist.Versions) != 1 || hist.Versions[0].Agent != "bob" {
		t.Fatalf("history in ws/beta: %+v", hist)
	}
	if hist, _ := callOK[service.HistoryResult](t, c, "history", map[string]any{"slug": "notes/a"}); hist.Project != "ws/alpha" || len(hist.Versions) != 1 || hist.Versions[0].Agent != "alice" {
		t.Fatalf("history without project: %+v", hist)
	}

	// Another project, existing or not: the same refusal. A malformed one:
	// invalid, naming the argument. Every tool, and nothing changes.
	argsFor := map[string]map[string]any{
		"remember": {"slug": "notes/a", "content": "overwrite"},
		"forget":   {"slug": "notes/a"},
		"get":      {"slug": "notes/a"},
		"history":  {"slug": "notes/a"},
		"list":     {},
		"recall":   {"query": "plum"},
	}
	for tool, base := range argsFor {
		with := func(project string) map[string]any {
			args := map[string]any{"project": project}
			for k, v := range base {
				args[k] = v
			}
			return args
		}
		for _, p := range []string{"ws/gamma", "ws/nope"} {
			if msg := callErr(t, c, tool, with(p)); msg != "forbidden: no key for project "+p {
				t.Errorf("%s in %s: %q, want %q", tool, p, msg, "forbidden: no key for project "+p)
			}
		}
		for _, p := range []string{"ACME/x", "a", "a/b/c", strings.Repeat("a", 200), "ws/", "/alpha"} {
			msg := callErr(t, c, tool, with(p))
			if !strings.HasPrefix(msg, "invalid: ") || !strings.Contains(msg, "project") || len(msg) > 300 {
				t.Errorf("%s with project %.20q: %q, want a short invalid naming project", tool, p, msg)
			}
		}
	}
	if l, _ := callOK[service.ListResult](t, gamma, "list", map[string]any{}); len(l.Entries) != 1 || l.Entries[0].Version != 1 {
		t.Fatalf("ws/gamma after the refused calls: %+v", l.Entries)
	}
	for _, p := range []string{"ws/alpha", "ws/beta"} {
		if l := listIn(p); len(l) != 1 || l[0].Version != 1 {
			t.Fatalf("%s after the refused calls: %+v", p, l)
		}
	}

	if r, text := callOK[service.WriteResult](t, c, "forget", map[string]any{"project": "ws/beta", "slug": "notes/b"}); r.Project != "ws/beta" || r.Version != 2 || !strings.Contains(text, " in ws/beta ") {
		t.Fatalf("forget in ws/beta: %+v %q", r, text)
	}
	if l := listIn("ws/beta"); len(l) != 0 {
		t.Fatalf("ws/beta after forget: %+v", l)
	}
	if l := listIn(""); len(l) != 1 {
		t.Fatalf("forget in ws/beta touched ws/alpha: %+v", l)
	}
	if r, _ := callOK[service.WriteResult](t, c, "forget", map[string]any{"slug": "notes/a"}); r.Project != "ws/alpha" || r.Version != 2 {
		t.Fatalf("forget without project: %+v, want v2 in ws/alpha", r)
	}
	if l, _ := callOK[service.ListResult](t, gamma, "list", map[string]any{}); len(l.Entries) != 1 {
		t.Fatalf("forget without project touched ws/gamma's notes/a: %+v", l.Entries)
	}

	// One key: its own project may be named; any other is forbidden.
	one := h.client(t, tokA)
	if h, _ := callOK[service.HistoryResult](t, one, "history", map[string]any{"project": "ws/alpha", "slug": "notes/a"}); h.Project != "ws/alpha" || len(h.Versions) != 2 {
		t.Fatalf("one key naming its project: %+v", h)
	}
	if msg := callErr(t, one, "get", map[string]any{"project": "ws/beta", "slug": "notes/b"}); msg != "forbidden: no key for project ws/beta" {
		t.Fatalf("one key naming another project: %q", msg)
	}
}

// TestRevokingOneOfTwoKeys: once one key of a pair is revoked, the next call
// with the pair fails as unauthorized — over HTTP (the auth in front of the
// handler refuses the request, naming the key's position) and over stdio
// (the tool call fails naming the revoked key) — and writes nothing.
func TestRevokingOneOfTwoKeys(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, _ := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	tokB, b := h.env.Key(t, "ws", "beta", "bob", memory.RoleWrite)
	pair := tokA + "," + tokB
	c := h.client(t, pair)
	raw := &sessHarness{url: h.url}
	session := raw.open(t, pair)
	s, _ := stdioClient(t, New(h.env.Svc, Options{Logger: testLogger(t)}), tokA+","+tokB)
	for _, cl := range []*client.Client{c, s} {
		callOK[service.ListResult](t, cl, "list", map[string]any{})
	}
	if err := h.env.Store.RevokeKey(context.Background(), b.First().ID); err != nil {
		t.Fatal(err)
	}
	if res, err := callRaw(c, "remember", map[string]any{"slug": "after", "content": "x"}); err == nil || !strings.Contains(err.Error(), "authorization") {
		t.Fatalf("HTTP call after revoking the second key: %+v, %v; want refused as unauthorized", res, err)
	}
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"after","content":"x"}}}`
	if a := raw.send(t, "POST", pair, session, call); a.code != 401 || !strings.Contains(a.body, "key 2 of 2 is unknown or revoked") {
		t.Fatalf("call on the pair's session after revoking the second key: %d %s", a.code, a.body)
	}
	msg := callErr(t, s, "remember", map[string]any{"slug": "after", "content": "x"})
	if !strings.HasPrefix(msg, "unauthorized: key ") || !strings.Contains(msg, `agent "bob" in ws/beta was revoked`) {
		t.Fatalf("stdio call after revoking the second key: %q", msg)
	}
	_, alice := h.env.Key(t, "ws", "alpha", "checker", memory.RoleRead)
	if _, err := h.env.Svc.Get(context.Background(), alice, service.GetRequest{Slug: "after"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("a refused call wrote: %v", err)
	}
}

// TestSessionBelongsToItsKeySet: a session opened with keys A and C works
// with exactly that set, in any order and spacing; A alone, C alone, or A
// with another key get the same 404 as for an unknown id, and a session of
// A alone is not the pair's.
func TestSessionBelongsToItsKeySet(t *testing.T) {
	h := newSessHarness(t, Options{})
	tokC, _ := h.env.Key(t, "ws", "q", "agent-c", memory.RoleRead)
	tokD, _ := h.env.Key(t, "ws", "r", "agent-d", memory.RoleRead)
	pair := h.tokA + "," + tokC
	s := h.open(t, pair)
	alone := h.open(t, h.tokA)
	for _, set := range []string{pair, tokC + "," + h.tokA, " " + tokC + " , " + h.tokA + " ", pair + "," + h.tokA} {
		if a := h.send(t, http.MethodPost, set, s, listBody); a.code != http.StatusOK {
			t.Fatalf("the pair's session with the same keys: %d %s", a.code, a.body)
		}
	}
	for name, set := range map[string]string{"A alone": h.tokA, "C alone": tokC, "A and D": h.tokA + "," + tokD, "A, C and D": pair + "," + tokD} {
		for _, m := range []struct{ method, body string }{{http.MethodPost, listBody}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
			refusedAs(t, name+" "+m.method+" on the pair's session", h.send(t, m.method, set, s, m.body), http.StatusNotFound, "not_found")
		}
	}
	refusedAs(t, "the pair on A's own session", h.send(t, http.MethodPost, pair, alone, listBody), http.StatusNotFound, "not_found")
	if a := h.send(t, http.MethodDelete, tokC+","+h.tokA, s, ""); a.code != http.StatusOK {
		t.Fatalf("the pair's DELETE: %d %s", a.code, a.body)
	}
	if a := h.send(t, http.MethodPost, h.tokA, alone, listBody); a.code != http.StatusOK {
		t.Fatalf("A's own session after the pair's ended: %d %s", a.code, a.body)
	}
}

// TestSessionLimitsCountEveryKey: the session and stream limits are per key,
// and a session counts for every key it was opened with. Otherwise a holder
// of k keys would get the limit once per set of them (2^k - 1 sets): 8 keys
// would hold 255 times a key's sessions.
func TestSessionLimitsCountEveryKey(t *testing.T) {
	h := newSessHarness(t, Options{MaxSessionsPerKey: 2, MaxStreamsPerKey: 1})
	tokC, _ := h.env.Key(t, "ws", "q", "agent-c", memory.RoleRead)
	tokD, _ := h.env.Key(t, "ws", "r", "agent-d", memory.RoleRead)
	a := h.open(t, h.tokA)
	ac := h.open(t, h.tokA+","+tokC)
	d := h.open(t, tokD)
	// A holds two sessions now (its own and the pair's): a third with A ends
	// A's least recently used one, and nobody else's.
	ad := h.open(t, h.tokA+","+tokD)
	refusedAs(t, "A's least recently used session", h.send(t, http.MethodPost, h.tokA, a, listBody), http.StatusNotFound, "not_found")
	for _, c := range []struct{ name, token, id string }{ // in this order: D's own is its least recently used
		{"D", tokD, d}, {"A and C", h.tokA + "," + tokC, ac}, {"A and D", h.tokA + "," + tokD, ad},
	} {
		if ans := h.send(t, http.MethodPost, c.token, c.id, listBody); ans.code != http.StatusOK {
			t.Errorf("%s's session after A's eviction: %d %s", c.name, ans.code, ans.body)
		}
	}
	if n := h.srv.OpenSessions(); n != 3 {
		t.Errorf("open sessions %d, want 3", n)
	}
	// D holds two sessions (its own and A and D's): one more for C and D
	// ends D's least recently used, its own.
	cd := h.open(t, tokC+","+tokD)
	refusedAs(t, "D's least recently used session", h.send(t, http.MethodPost, tokD, d, listBody), http.StatusNotFound, "not_found")
	if n := h.srv.OpenSessions(); n != 3 {
		t.Errorf("open sessions %d, want 3 (A and C, A and D, C and D)", n)
	}

	// One stream per key: the pair's stream uses A's and C's.
	if st := h.stream(t, h.tokA+","+tokC, ac); st.StatusCode != http.StatusOK {
		t.Fatalf("the pair's stream: %d", st.StatusCode)
	}
	refusedAs(t, "a stream of A and D while A streams", h.send(t, http.MethodGet, h.tokA+","+tokD, ad, ""), http.StatusTooManyRequests, "unavailable")
	refusedAs(t, "a stream of C and D while C streams", h.send(t, http.MethodGet, tokC+","+tokD, cd, ""), http.StatusTooManyRequests, "unavailable")
}
