package mcpserver

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestBadInput: every bad call gets a clear error naming the problem, and changes
// nothing (invariant 6,
// docs/architecture.md#invariant-6-bad-input-changes-nothing).
func TestBadInput(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	c := h.client(t, token)
	callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "seed/entry", "content": "the one entry"})

	big := strings.Repeat("x", memory.DefaultMaxContent+1)
	cases := []struct {
		name string
		tool string
		args map[string]any
		// want are substrings of the error text, the first one its start.
		want []string
	}{
		{"bad slug", "remember", map[string]any{"slug": "Bad Slug!", "content": "x"}, []string{"invalid: ", "slug", "Bad Slug!"}},
		{"dot-dot in slug", "remember", map[string]any{"slug": "notes/../etc", "content": "x"}, []string{"invalid: ", "'..'"}},
		{"leading slash", "remember", map[string]any{"slug": "/abs", "content": "x"}, []string{"invalid: ", "slug"}},
		{"empty slug", "remember", map[string]any{"slug": "", "content": "x"}, []string{"invalid: ", "slug"}},
		{"missing slug", "remember", map[string]any{"content": "x"}, []string{"invalid: ", "slug"}},
		{"empty content", "remember", map[string]any{"slug": "notes/empty", "content": "  "}, []string{"invalid: ", "content"}},
		{"oversized content", "remember", map[string]any{"slug": "notes/big", "content": big}, []string{"too_large: ", "content", "65537"}},
		{"bad tag", "remember", map[string]any{"slug": "notes/t", "content": "x", "tags": []string{"has space"}}, []string{"invalid: ", "tag"}},
		{"unknown argument", "remember", map[string]any{"slug": "notes/u", "content": "x", "agent": "mallory"}, []string{"invalid: ", "agent"}},
		{"number for slug", "remember", map[string]any{"slug": 42, "content": "x"}, []string{"invalid: ", "slug"}},
		{"object for tags", "remember", map[string]any{"slug": "notes/o", "content": "x", "tags": map[string]any{"a": 1}}, []string{"invalid: ", "tags"}},
		{"string for expected_version", "remember", map[string]any{"slug": "seed/entry", "content": "x", "expected_version": "1"}, []string{"invalid: ", "expected_version"}},
		{"negative expected_version", "remember", map[string]any{"slug": "seed/entry", "content": "x", "expected_version": -1}, []string{"invalid: ", "expected_version"}},
		{"stale expected_version", "remember", map[string]any{"slug": "seed/entry", "content": "x", "expected_version": 3}, []string{"conflict: ", "seed/entry"}},
		{"expected_version 0 on existing slug", "remember", map[string]any{"slug": "seed/entry", "content": "x", "expected_version": 0}, []string{"conflict: ", "seed/entry"}},
		{"stale expected_version on forget", "forget", map[string]any{"slug": "seed/entry", "expected_version": 7}, []string{"conflict: ", "seed/entry"}},
		{"forget unknown slug", "forget", map[string]any{"slug": "no/such"}, []string{"not_found: ", "no/such"}},
		{"string for limit", "recall", map[string]any{"query": "entry", "limit": "ten"}, []string{"invalid: ", "limit"}},
		{"recall limit too high", "recall", map[string]any{"query": "entry", "limit": 51}, []string{"invalid: ", "limit", "50"}},
		{"negative list limit", "list", map[string]any{"limit": -1}, []string{"invalid: ", "limit"}},
		{"list limit too high", "list", map[string]any{"limit": 201}, []string{"invalid: ", "limit", "200"}},
		{"history limit too high", "history", map[string]any{"slug": "seed/entry", "limit": 1000}, []string{"invalid: ", "limit"}},
		{"empty query", "recall", map[string]any{"query": "   "}, []string{"invalid: ", "query"}},
		{"missing query", "recall", map[string]any{}, []string{"invalid: ", "query"}},
		{"get unknown version", "get", map[string]any{"slug": "seed/entry", "version": 9}, []string{"not_found: "}},
		{"fractional version", "get", map[string]any{"slug": "seed/entry", "version": 1.5}, []string{"invalid: ", "version"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := callErr(t, c, tc.tool, tc.args)
			t.Log(msg)
			wantError(t, msg, tc.want)
			if len(msg) > 300 {
				t.Errorf("error is %d bytes; keep it short: %.300s", len(msg), msg)
			}
			assertOnlySeed(t, h, c)
		})
	}

	t.Run("unknown tool", func(t *testing.T) {
		res, err := callRaw(c, "delete_everything", map[string]any{"slug": "seed/entry"})
		if err == nil {
			t.Fatalf("unknown tool answered %+v, want a JSON-RPC error", res)
		}
		if !strings.Contains(err.Error(), "delete_everything") || !strings.Contains(err.Error(), "not found") {
			t.Errorf("unknown tool error %q should name the tool", err)
		}
		assertOnlySeed(t, h, c)
	})
}

// assertOnlySeed checks that the project still holds exactly seed/entry v1.
func assertOnlySeed(t *testing.T, h *harness, c *client.Client) {
	t.Helper()
	lst, _ := callOK[service.ListResult](t, c, "list", map[string]any{})
	if len(lst.Entries) != 1 || lst.Entries[0].Slug != "seed/entry" || lst.Entries[0].Version != 1 {
		t.Fatalf("bad input changed the entries: %+v", lst.Entries)
	}
	hist, _ := callOK[service.HistoryResult](t, c, "history", map[string]any{"slug": "seed/entry"})
	if len(hist.Versions) != 1 {
		t.Fatalf("bad input wrote versions: %+v", hist.Versions)
	}
}
