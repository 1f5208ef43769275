package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

func TestListTools(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, token)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.RawInputSchema) == 0 && tool.InputSchema.Type != "object" {
			t.Errorf("%s has no input schema", tool.Name)
		}
		if tool.OutputSchema.Type != "object" || len(tool.OutputSchema.Properties) == 0 {
			t.Errorf("%s has no output schema", tool.Name)
		}
		ro := tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint
		destructive := tool.Annotations.DestructiveHint != nil && *tool.Annotations.DestructiveHint
		// remember and forget write; review approves (a version) and rejects.
		wantRO := !slices.Contains([]string{"remember", "forget", "review"}, tool.Name)
		if ro != wantRO || destructive != (tool.Name == "forget") {
			t.Errorf("%s: readOnly=%v destructive=%v", tool.Name, ro, destructive)
		}
		// A hint left out takes the spec's default: destructive true.
		if !ro && tool.Annotations.DestructiveHint == nil {
			t.Errorf("%s writes but does not say whether it destroys", tool.Name)
		}
		if ow := tool.Annotations.OpenWorldHint; ow == nil || *ow {
			t.Errorf("%s: openWorldHint %v, want false (nothing reaches outside Munin)", tool.Name, ow)
		}
	}
	slices.Sort(names)
	if want := []string{"changes", "forget", "get", "history", "list", "recall", "remember", "review"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		all, _ := json.Marshal(tool)
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		t.Logf("%-8s %4d bytes: description %3d, input %3d, output %3d", tool.Name, len(all), len(tool.Description), len(in), len(out))
	}
	t.Logf("tools/list is %d bytes", len(raw))
	if len(raw) >= 6000 {
		t.Fatalf("tools/list is %d bytes, budget is under 6,000 (issue 9: under 6 KB)", len(raw))
	}
	// Results never carry null arrays, and the output schemas say so.
	for _, tool := range res.Tools {
		out, _ := json.Marshal(tool.OutputSchema)
		if strings.Contains(string(out), `"null"`) {
			t.Errorf("%s output schema allows null: %s", tool.Name, out)
		}
	}
}

// TestToolRoundTrip walks an entry through its life over MCP, checking the
// structured results field by field.
func TestToolRoundTrip(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, token)
	before := time.Now().UTC().Add(-time.Minute)

	rem, text := callOK[service.WriteResult](t, c, "remember", map[string]any{
		"slug":    "decisions/db-choice",
		"content": "# SQLite for storage\nWe chose embedded SQLite with WAL; nothing else to install. marmalade",
		"tags":    []string{"db", "infra"},
	})
	if rem.Slug != "decisions/db-choice" || rem.Version != 1 {
		t.Fatalf("remember: %+v", rem)
	}
	if rem.Project != "ws/proj" {
		t.Fatalf("remember names project %q, want ws/proj", rem.Project)
	}
	if text != "remembered decisions/db-choice v1 in ws/proj" {
		t.Errorf("remember text %q", text)
	}
	created := utcStamp(t, rem.CreatedAt)
	if created.Before(before) || created.After(time.Now().Add(time.Minute)) {
		t.Errorf("created_at %s is not now", rem.CreatedAt)
	}

	rem2, _ := callOK[service.WriteResult](t, c, "remember", map[string]any{
		"slug":             "decisions/db-choice",
		"title":            "SQLite, decided",
		"content":          "We chose embedded SQLite with WAL and group commit. gooseberry",
		"tags":             []string{"db"},
		"expected_version": 1,
	})
	if rem2.Version != 2 {
		t.Fatalf("second remember: %+v", rem2)
	}

	got, text := callOK[service.Entry](t, c, "get", map[string]any{"slug": "decisions/db-choice"})
	want := service.Entry{
		Project: "ws/proj", Slug: "decisions/db-choice", Version: 2, Title: "SQLite, decided",
		Content: "We chose embedded SQLite with WAL and group commit. gooseberry",
		Tags:    []string{"db"}, Agent: "alice", CreatedAt: rem2.CreatedAt, LatestVersion: 2,
	}
	if !equalJSON(got, want) {
		t.Fatalf("get:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(text, "gooseberry") || !strings.Contains(text, "v2 of 2 (ws/proj)") {
		t.Errorf("get text lacks the content or version: %q", text)
	}

	old, _ := callOK[service.Entry](t, c, "get", map[string]any{"slug": "decisions/db-choice", "version": 1})
	if old.Version != 1 || old.Title != "SQLite for storage" || old.LatestVersion != 2 || !slices.Equal(old.Tags, []string{"db", "infra"}) {
		t.Fatalf("get v1: %+v", old)
	}

	rec, text := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "gooseberry"})
	if len(rec.Hits) != 1 {
		t.Fatalf("recall gooseberry: %+v", rec)
	}
	hit := rec.Hits[0]
	if hit.Project != "ws/proj" || hit.Slug != "decisions/db-choice" || hit.Version != 2 || hit.Title != "SQLite, decided" ||
		!slices.Equal(hit.Tags, []string{"db"}) || hit.Score <= 0 || hit.Snippet == "" || hit.Match != memory.MatchWords {
		t.Fatalf("hit: %+v", hit)
	}
	if !utcStamp(t, hit.UpdatedAt).Equal(rem2.CreatedAt) {
		t.Errorf("hit updated_at %s, want the version's created_at %s", hit.UpdatedAt, rem2.CreatedAt)
	}
	if !strings.Contains(text, "decisions/db-choice v2 (ws/proj)") {
		t.Errorf("recall text %q", text)
	}
	// The replaced version's word is gone from the index.
	if rec, _ := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "marmalade"}); len(rec.Hits) != 0 {
		t.Fatalf("recall of a replaced word: %+v", rec)
	}

	lst, _ := callOK[service.ListResult](t, c, "list", map[string]any{"prefix": "decisions/"})
	if len(lst.Entries) != 1 || lst.NextCursor != "" {
		t.Fatalf("list: %+v", lst)
	}
	if e := lst.Entries[0]; e.Project != "ws/proj" || e.Slug != "decisions/db-choice" || e.Version != 2 || e.Title != "SQLite, decided" || !slices.Equal(e.Tags, []string{"db"}) {
		t.Fatalf("list entry: %+v", e)
	}

	hist, _ := callOK[service.HistoryResult](t, c, "history", map[string]any{"slug": "decisions/db-choice"})
	if hist.Project != "ws/proj" || hist.Slug != "decisions/db-choice" || len(hist.Versions) != 2 || hist.Versions[0].Version != 2 || hist.Versions[1].Version != 1 {
		t.Fatalf("history: %+v", hist)
	}
	if v := hist.Versions[0]; v.Agent != "alice" || v.Deleted || v.Size != len(want.Content) || !utcStamp(t, v.CreatedAt).Equal(rem2.CreatedAt) {
		t.Fatalf("history v2: %+v", v)
	}

	if msg := callErr(t, c, "forget", map[string]any{"slug": "decisions/db-choice", "expected_version": 1}); !strings.HasPrefix(msg, "conflict: ") {
		t.Fatalf("forget with a stale expected_version: %q", msg)
	}
	fg, text := callOK[service.WriteResult](t, c, "forget", map[string]any{"slug": "decisions/db-choice", "expected_version": 2})
	if fg.Project != "ws/proj" || fg.Slug != "decisions/db-choice" || fg.Version != 3 || utcStamp(t, fg.CreatedAt).Before(rem2.CreatedAt) {
		t.Fatalf("forget: %+v", fg)
	}
	if !strings.HasPrefix(text, "forgot decisions/db-choice") {
		t.Errorf("forget text %q", text)
	}

	if msg := callErr(t, c, "get", map[string]any{"slug": "decisions/db-choice"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("get after forget: %q", msg)
	}
	if rec, _ := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "gooseberry"}); len(rec.Hits) != 0 {
		t.Fatalf("recall after forget: %+v", rec)
	}
	if lst, _ := callOK[service.ListResult](t, c, "list", map[string]any{}); len(lst.Entries) != 0 {
		t.Fatalf("list after forget: %+v", lst)
	}
	hist, _ = callOK[service.HistoryResult](t, c, "history", map[string]any{"slug": "decisions/db-choice"})
	if len(hist.Versions) != 3 || !hist.Versions[0].Deleted || hist.Versions[0].Version != 3 || hist.Versions[1].Deleted {
		t.Fatalf("history after forget: %+v", hist)
	}
}

// TestListPages pages through entries with next_cursor.
func TestListPages(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, token)
	for _, slug := range []string{"notes/a", "notes/b", "notes/c"} {
		callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": slug, "content": "text of " + slug})
	}
	var seen []string
	cursor := ""
	for range 5 {
		page, _ := callOK[service.ListResult](t, c, "list", map[string]any{"limit": 2, "cursor": cursor})
		for _, e := range page.Entries {
			seen = append(seen, e.Slug)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"notes/a", "notes/b", "notes/c"}; !slices.Equal(seen, want) {
		t.Fatalf("pages gave %v, want %v", seen, want)
	}
}

// TestReadKeyCannotWrite: a read key gets forbidden and nothing is written.
func TestReadKeyCannotWrite(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "reader", memory.RoleRead)
	c := h.client(t, token)
	msg := callErr(t, c, "remember", map[string]any{"slug": "notes/x", "content": "hello"})
	if !strings.HasPrefix(msg, "forbidden: ") {
		t.Fatalf("remember with a read key: %q", msg)
	}
	if msg := callErr(t, c, "forget", map[string]any{"slug": "notes/x"}); !strings.HasPrefix(msg, "forbidden: ") {
		t.Fatalf("forget with a read key: %q", msg)
	}
	if lst, _ := callOK[service.ListResult](t, c, "list", map[string]any{}); len(lst.Entries) != 0 {
		t.Fatalf("read key wrote: %+v", lst)
	}
	if msg := callErr(t, c, "history", map[string]any{"slug": "notes/x"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("history: %q", msg)
	}
}

// TestKeysSeparateProjects: a key only sees its own project.
func TestKeysSeparateProjects(t *testing.T) {
	h := newHarness(t, service.Options{})
	tokA, _ := h.env.Key(t, "ws", "alpha", "alice", memory.RoleWrite)
	tokB, _ := h.env.Key(t, "ws", "beta", "bob", memory.RoleWrite)
	a, b := h.client(t, tokA), h.client(t, tokB)
	callOK[service.WriteResult](t, a, "remember", map[string]any{"slug": "secret", "content": "alpha only quince"})
	if msg := callErr(t, b, "get", map[string]any{"slug": "secret"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("other project's get: %q", msg)
	}
	if rec, _ := callOK[service.RecallResult](t, b, "recall", map[string]any{"query": "quince"}); len(rec.Hits) != 0 {
		t.Fatalf("other project's recall: %+v", rec)
	}
	got, _ := callOK[service.Entry](t, a, "get", map[string]any{"slug": "secret"})
	if got.Agent != "alice" {
		t.Fatalf("agent %q, want the key's agent", got.Agent)
	}
}

// TestMissingKeyIsUnauthorized: HTTPHandler mounted without the auth
// middleware answers tool calls with unauthorized, never runs them.
func TestMissingKeyIsUnauthorized(t *testing.T) {
	env := newHarness(t, service.Options{}).env
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	ts := httptestServer(t, srv.HTTPHandler())
	c := connect(t, ts+Endpoint, "")
	msg := callErr(t, c, "remember", map[string]any{"slug": "notes/x", "content": "hello"})
	if !strings.HasPrefix(msg, "unauthorized: ") {
		t.Fatalf("call without key: %q", msg)
	}
}

// utcStamp checks that a time decoded from a result was sent in UTC (an
// RFC 3339 text ending in Z decodes to time.UTC) and returns it.
func utcStamp(t testing.TB, ts time.Time) time.Time {
	t.Helper()
	if ts.IsZero() || ts.Location() != time.UTC {
		t.Fatalf("timestamp %s is zero or not sent in UTC", ts)
	}
	return ts
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
