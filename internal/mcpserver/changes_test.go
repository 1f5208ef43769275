package mcpserver

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// connectEra connects an MCP client that asks for protocol version and
// checks that it got it.
func connectEra(t *testing.T, url, token, version string) *client.Client {
	t.Helper()
	c, res := connectAs(t, url, token, version)
	if res.ProtocolVersion != version {
		t.Fatalf("negotiated protocol %s, want %s", res.ProtocolVersion, version)
	}
	return c
}

// changeLine is what a test compares of a change: everything but its time.
func changeLine(ch service.Change) string {
	return fmt.Sprintf("%s %s v%d %s by %s %s", ch.Project, ch.Slug, ch.Version, ch.Kind, ch.Agent, ch.Proposal)
}

// TestChangesTool: in both protocol eras, the changes tool is listed and
// answers, for one session holding two keys, exactly the writes made
// after since=now in the caller's projects — its own in both projects and
// another agent's — in commit order, and nothing of a project it holds no
// key for; the next cursor then answers nothing new.
func TestChangesTool(t *testing.T) {
	for _, era := range []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run(era, func(t *testing.T) {
			h := newHarness(t, service.Options{})
			tokA, _ := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
			tokB, _ := h.env.Key(t, "ws", "beta", "bob", memory.RoleWrite)
			tokE, _ := h.env.Key(t, "ws", "alpha", "erin", memory.RoleWrite)
			tokG, _ := h.env.Key(t, "ws", "gamma", "gus", memory.RoleWrite) // not the caller's
			c := connectEra(t, h.url, tokA+","+tokB, era)
			erin, gus := connectEra(t, h.url, tokE, era), connectEra(t, h.url, tokG, era)

			if !strings.Contains(string(listTools(t, c)), `"name":"changes"`) {
				t.Fatal("tools/list does not list changes")
			}
			// History before the cursor stays out of its answer.
			callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "notes/old", "content": "before"})

			start, text := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": "now"})
			if len(start.Changes) != 0 || start.NextCursor == "" {
				t.Fatalf("since now: %+v, want no changes and a cursor", start)
			}
			if !strings.Contains(text, fmt.Sprintf("%q", start.NextCursor)) {
				t.Errorf("since now: text does not give the cursor: %q", text)
			}

			callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "notes/a", "content": "one"})
			callOK[service.WriteResult](t, c, "remember", map[string]any{"project": "ws/beta", "slug": "notes/b", "content": "two"})
			callOK[service.WriteResult](t, gus, "remember", map[string]any{"slug": "notes/secret", "content": "not yours"})
			callOK[service.WriteResult](t, erin, "remember", map[string]any{"slug": "notes/a", "content": "three", "expected_version": 1})
			callOK[service.WriteResult](t, c, "forget", map[string]any{"project": "ws/beta", "slug": "notes/b"})

			got, text := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": start.NextCursor})
			var lines []string
			for i, ch := range got.Changes {
				lines = append(lines, changeLine(ch))
				if ch.At.IsZero() || ch.At.Location() != time.UTC {
					t.Errorf("change %d: at %v, want a UTC time", i, ch.At)
				}
				if i > 0 && ch.At.Before(got.Changes[i-1].At) {
					t.Errorf("change %d at %v is before the one before it (%v)", i, ch.At, got.Changes[i-1].At)
				}
			}
			want := []string{
				"ws/alpha notes/a v1 remember by alice ",
				"ws/beta notes/b v1 remember by bob ",
				"ws/alpha notes/a v2 remember by erin ",
				"ws/beta notes/b v2 forget by bob ",
			}
			if !slices.Equal(lines, want) {
				t.Fatalf("changes since now:\n got %q\nwant %q", lines, want)
			}
			if got.NextCursor == "" || got.NextCursor == start.NextCursor {
				t.Errorf("next_cursor %q after four changes (was %q)", got.NextCursor, start.NextCursor)
			}
			for _, w := range []string{"4 changes, oldest first:", "ws/alpha notes/a v2: remember by erin", "ws/beta notes/b v2: forget by bob",
				fmt.Sprintf("next_cursor %q", got.NextCursor)} {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "gamma") || strings.Contains(text, "secret") {
				t.Errorf("text names another project's write:\n%s", text)
			}

			again, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": got.NextCursor})
			if len(again.Changes) != 0 {
				t.Fatalf("since the last cursor: %+v, want nothing new", again.Changes)
			}
		})
	}
}

// TestChangesOverStdio: a stdio client reads the feed as an HTTP one does.
func TestChangesOverStdio(t *testing.T) {
	h := newHarness(t, service.Options{})
	tok, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c, _ := stdioClient(t, New(h.env.Svc, Options{ValidateOutput: true, Logger: testLogger(t)}), tok)
	start, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": "now"})
	callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "notes/s", "content": "over stdio"})
	got, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": start.NextCursor})
	if len(got.Changes) != 1 || changeLine(got.Changes[0]) != "ws/proj notes/s v1 remember by alice " {
		t.Fatalf("changes over stdio: %+v", got.Changes)
	}
}

// TestChangesPages: a limit cuts the feed into pages; following
// next_cursor reads each change once, in order, and a full page's text
// says that more may follow.
func TestChangesPages(t *testing.T) {
	h := newHarness(t, service.Options{})
	tok, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, tok)
	start, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": "now"})
	var want []string
	for i := range 5 {
		slug := fmt.Sprintf("notes/n%d", i)
		callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": slug, "content": "text " + slug})
		want = append(want, "ws/proj "+slug+" v1 remember by alice ")
	}
	var got []string
	cursor := start.NextCursor
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatalf("still reading after %d pages: %q", page, got)
		}
		res, text := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": cursor, "limit": 2})
		if len(res.Changes) > 2 {
			t.Fatalf("page %d has %d changes, limit 2", page, len(res.Changes))
		}
		if len(res.Changes) == 2 && !strings.Contains(text, fmt.Sprintf("more: call changes with since %q", res.NextCursor)) {
			t.Errorf("full page %d: text does not say more may follow: %q", page, text)
		}
		for _, ch := range res.Changes {
			got = append(got, changeLine(ch))
		}
		cursor = res.NextCursor
		if len(res.Changes) == 0 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages:\n got %q\nwant %q", got, want)
	}
	// Without since the feed starts at the beginning.
	all, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{})
	if len(all.Changes) != 5 {
		t.Fatalf("changes without since: %d, want all 5", len(all.Changes))
	}
}

// TestChangesRefusals: a cursor that is not one of the server's, a limit
// out of range, an argument of the wrong type or one the tool does not
// take are tool errors naming the problem; a server-admin key gets the
// refusal every memory tool gives it.
func TestChangesRefusals(t *testing.T) {
	h := newHarness(t, service.Options{})
	tok, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, tok)
	good, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": "now"})
	for _, tc := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"since": "garbled"}, []string{"invalid: ", "cursor", "since"}},
		{map[string]any{"since": good.NextCursor + "x"}, []string{"invalid: ", "cursor", "since"}},
		{map[string]any{"since": strings.Repeat("c", 10000)}, []string{"invalid: ", "cursor"}},
		{map[string]any{"limit": 1001}, []string{"invalid: ", "limit", "1000"}},
		{map[string]any{"limit": -1}, []string{"invalid: ", "limit"}},
		{map[string]any{"limit": "ten"}, []string{"invalid: ", "limit", "integer"}},
		{map[string]any{"since": 5}, []string{"invalid: ", "since", "string"}},
		{map[string]any{"project": "ws/proj"}, []string{"invalid: ", "unknown argument", "project"}},
	} {
		wantError(t, callErr(t, c, "changes", tc.args), tc.want)
	}

	admin, _ := h.env.ServerAdmin(t, "root")
	a := h.client(t, admin)
	refusal := callErr(t, a, "list", map[string]any{})
	if msg := callErr(t, a, "changes", map[string]any{"since": "now"}); msg != refusal || !strings.HasPrefix(msg, "forbidden: ") {
		t.Fatalf("server-admin changes: %q, want list's refusal %q", msg, refusal)
	}
}

// TestChangesText: the text of a page names each change's time, project,
// slug, version (none for a proposal), kind, agent and proposal.
func TestChangesText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // a rendered time, not a clock
	res := service.ChangesResult{NextCursor: "c2", Changes: []service.Change{
		{Project: "ws/p", Slug: "ideas/x", Agent: "pat", Kind: "propose", At: at, Proposal: "ws.p.7"},
		{Project: "ws/p", Slug: "ideas/x", Version: 3, Agent: "ann", Kind: "approve", At: at, Proposal: "ws.p.7"},
	}}
	want := "2 changes, oldest first:\n" +
		"- 2026-01-02T03:04:05Z ws/p ideas/x: propose by pat (proposal ws.p.7)\n" +
		"- 2026-01-02T03:04:05Z ws/p ideas/x v3: approve by ann (proposal ws.p.7)\n" +
		`next_cursor "c2": keep it, and pass it as since next time`
	if got := changesText(res, false); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	if got := changesText(res, true); !strings.HasSuffix(got, `more: call changes with since "c2"`) {
		t.Errorf("full page text: %q", got)
	}
	if got := changesText(service.ChangesResult{Changes: []service.Change{}, NextCursor: "c3"}, false); got != `0 changes`+"\n"+`next_cursor "c3": keep it, and pass it as since next time` {
		t.Errorf("empty page text: %q", got)
	}
}

// TestInstructionsSayWhatSchemasLeaveOut: every argument description the
// lean schemas leave out (schemas.go) is said elsewhere — the
// instructions for project, as_of, cursor and each tool's limit, get's
// description for its version — and the changes tool's description says
// how to start a session.
func TestInstructionsSayWhatSchemasLeaveOut(t *testing.T) {
	tools := map[string]mcp.Tool{}
	for _, tool := range generatedTools() {
		tools[tool.Name] = tool
	}
	for _, w := range []string{`project ("workspace/project")`, "as_of (RFC 3339) reads as it was then", "cursor takes the next_cursor of the previous page",
		fmt.Sprintf("changes 1-%d (default %d)", memory.MaxChangesLimit, memory.DefaultChangesLimit)} {
		if !strings.Contains(instructions, w) {
			t.Errorf("instructions lack %q", w)
		}
	}
	described := 0
	for name, tool := range tools {
		props := asMap(t, tool.InputSchema)["properties"]
		if tool.RawInputSchema != nil {
			var s mcp.ToolInputSchema
			if err := s.UnmarshalJSON(tool.RawInputSchema); err != nil {
				t.Fatal(err)
			}
			props = asMap(t, s)["properties"]
		}
		limit, _ := props.(map[string]any)["limit"].(map[string]any)
		desc, _ := limit["description"].(string)
		if desc == "" {
			continue
		}
		described++
		// "1-50, default 10" is said as "recall 1-50 (default 10)".
		r, d, ok := strings.Cut(desc, ", default ")
		if w := fmt.Sprintf("%s %s (default %s)", name, r, d); !ok || !strings.Contains(instructions, w) {
			t.Errorf("instructions do not say %s's limit %q as %q", name, desc, w)
		}
	}
	if described < 3 {
		t.Errorf("%d limits described in the generated schemas, want recall's, list's and history's", described)
	}
	if !strings.Contains(tools["get"].Description, "latest version") {
		t.Errorf("get's description does not say the default version: %q", tools["get"].Description)
	}
	for _, w := range []string{"session", "since", `"now"`, "next_cursor"} {
		if !strings.Contains(changesDescription, w) {
			t.Errorf("changes' description lacks %q: %q", w, changesDescription)
		}
	}
}

// TestChangesToolNamesClient: a change made through an OAuth client says
// so in the tool's text and structured result ("by alice via Claude").
func TestChangesToolNamesClient(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, alice := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	c := connectEra(t, h.url, tokA, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	start, _ := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": "now"})
	if _, err := h.env.Svc.Remember(t.Context(), alice.WithClient("Claude"), service.RememberRequest{Slug: "notes/x", Content: "via an app"}); err != nil {
		t.Fatal(err)
	}
	got, text := callOK[service.ChangesResult](t, c, "changes", map[string]any{"since": start.NextCursor})
	if len(got.Changes) != 1 || got.Changes[0].Client != "Claude" || !strings.Contains(text, "remember by alice via Claude") {
		t.Fatalf("changes: %+v\n%s\nwant one change by alice via Claude", got.Changes, text)
	}
}
