package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestProposeRememberAnswersPending: a propose key's remember over MCP
// answers exactly {project, slug, state "pending", proposal, base_version,
// created_at}, valid against the output schema tools/list sends (callOK
// validates it, and the server validates every result too).
func TestProposeRememberAnswersPending(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "pat", memory.RolePropose)
	c := h.client(t, token)

	res := call(t, c, "remember", map[string]any{"slug": "ideas/cache", "content": "Cache recall answers for a minute."})
	text := resultText(t, res)
	if res.IsError {
		t.Fatalf("remember with a propose key: %s", text)
	}
	validateResult(t, "remember", res.StructuredContent)
	raw, _ := json.Marshal(res.StructuredContent)
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"base_version", "created_at", "project", "proposal", "slug", "state"}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v: %s", got, want, raw)
	}
	var w service.WriteResult
	decodeExact(t, res.StructuredContent, &w)
	if w.Project != "ws/proj" || w.Slug != "ideas/cache" || w.State != "pending" || w.Version != 0 ||
		w.BaseVersion == nil || *w.BaseVersion != 0 || !strings.HasPrefix(w.Proposal, "ws.proj.") {
		t.Fatalf("pending answer %s", raw)
	}
	utcStamp(t, w.CreatedAt)
	if !strings.HasPrefix(text, "proposed ideas/cache in ws/proj: proposal "+w.Proposal+", pending review (based on v0)") {
		t.Errorf("text %q", text)
	}

	// A propose key's forget is a proposal too, based on the latest version.
	adminTok, _ := h.env.Key(t, "ws", "proj", "ann", memory.RoleAdmin)
	callOK[service.WriteResult](t, h.client(t, adminTok), "remember", map[string]any{"slug": "notes/old", "content": "old"})
	fg, text := callOK[service.WriteResult](t, c, "forget", map[string]any{"slug": "notes/old"})
	if fg.State != "pending" || fg.Version != 0 || fg.BaseVersion == nil || *fg.BaseVersion != 1 || fg.Proposal == "" || fg.Proposal == w.Proposal {
		t.Fatalf("forget with a propose key: %+v", fg)
	}
	if !strings.HasPrefix(text, "proposed forgetting notes/old in ws/proj: proposal "+fg.Proposal) {
		t.Errorf("forget text %q", text)
	}
}

// TestReviewOverMCP: a reviewer agent (admin key) lists the pending
// proposals, approves one (a version appears, its agent the proposer),
// approves one edited, and rejects one with a reason the proposer reads.
func TestReviewOverMCP(t *testing.T) {
	h := newHarness(t, service.Options{})
	propTok, _ := h.env.Key(t, "ws", "proj", "pat", memory.RolePropose)
	adminTok, _ := h.env.Key(t, "ws", "proj", "ann", memory.RoleAdmin)
	pat, ann := h.client(t, propTok), h.client(t, adminTok)

	ids := map[string]string{}
	for _, slug := range []string{"notes/a", "notes/b", "notes/c"} {
		w, _ := callOK[service.WriteResult](t, pat, "remember", map[string]any{
			"slug": slug, "content": "proposed text of " + slug, "tags": []string{"draft"}})
		ids[slug] = w.Proposal
	}

	page, text := callOK[reviewResult](t, ann, "review", map[string]any{"action": "list"})
	if len(page.Proposals) != 3 || page.NextCursor != "" {
		t.Fatalf("list: %+v", page)
	}
	p := page.Proposals[0]
	if p.ID != ids["notes/a"] || p.Slug != "notes/a" || p.Agent != "pat" || p.State != "pending" || p.BaseVersion != 0 ||
		p.CurrentVersion != 0 || p.Content != "proposed text of notes/a" || !slices.Equal(p.Tags, []string{"draft"}) {
		t.Fatalf("listed proposal %+v", p)
	}
	if !strings.HasPrefix(text, "3 pending proposals in ws/proj, oldest first:") || !strings.Contains(text, "proposed text of notes/b") {
		t.Errorf("list text %q", text)
	}
	// Nobody but its proposer sees a pending proposal.
	if msg := callErr(t, ann, "get", map[string]any{"slug": "notes/a"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("get before approval: %q", msg)
	}

	// Approve as proposed: version 1, written by the proposer.
	dec, text := callOK[reviewResult](t, ann, "review", map[string]any{"action": "approve", "id": ids["notes/a"]})
	if len(dec.Proposals) != 1 || dec.Proposals[0].State != "approved" || dec.Proposals[0].Version != 1 || dec.Proposals[0].DecidedBy != "ann" {
		t.Fatalf("approve: %+v", dec)
	}
	if text != "approved "+ids["notes/a"]+": notes/a v1 in ws/proj" {
		t.Errorf("approve text %q", text)
	}
	got, _ := callOK[service.Entry](t, ann, "get", map[string]any{"slug": "notes/a"})
	if got.Version != 1 || got.Agent != "pat" || got.Content != "proposed text of notes/a" {
		t.Fatalf("approved entry %+v", got)
	}

	// Edit, then approve: the reviewer's content, still the proposer's version.
	callOK[reviewResult](t, ann, "review", map[string]any{"action": "approve", "id": ids["notes/b"],
		"content": "edited by the reviewer", "tags": []string{"final"}})
	got, _ = callOK[service.Entry](t, ann, "get", map[string]any{"slug": "notes/b"})
	if got.Version != 1 || got.Agent != "pat" || got.Content != "edited by the reviewer" || !slices.Equal(got.Tags, []string{"final"}) {
		t.Fatalf("edited entry %+v", got)
	}

	// Reject with a reason: no version; the proposer reads why.
	rej, text := callOK[reviewResult](t, ann, "review", map[string]any{"action": "reject", "id": ids["notes/c"], "reason": "duplicate of notes/a"})
	if len(rej.Proposals) != 1 || rej.Proposals[0].State != "rejected" || rej.Proposals[0].Reason != "duplicate of notes/a" {
		t.Fatalf("reject: %+v", rej)
	}
	if !strings.HasPrefix(text, "rejected "+ids["notes/c"]) {
		t.Errorf("reject text %q", text)
	}
	if msg := callErr(t, ann, "get", map[string]any{"slug": "notes/c"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Fatalf("get of a rejected proposal's slug: %q", msg)
	}
	mine, _ := callOK[reviewResult](t, pat, "review", map[string]any{"action": "list", "state": "rejected"})
	if len(mine.Proposals) != 1 || mine.Proposals[0].ID != ids["notes/c"] || mine.Proposals[0].Reason != "duplicate of notes/a" {
		t.Fatalf("proposer's rejected list: %+v", mine)
	}
	if left, _ := callOK[reviewResult](t, ann, "review", map[string]any{"action": "list"}); len(left.Proposals) != 0 {
		t.Fatalf("pending after deciding all: %+v", left)
	}

	// A proposal whose entry moved since is not approved blindly.
	w, _ := callOK[service.WriteResult](t, pat, "remember", map[string]any{"slug": "notes/a", "content": "pat's update", "expected_version": 1})
	callOK[service.WriteResult](t, ann, "remember", map[string]any{"slug": "notes/a", "content": "ann's own update"})
	if msg := callErr(t, ann, "review", map[string]any{"action": "approve", "id": w.Proposal}); !strings.HasPrefix(msg, "conflict: ") {
		t.Fatalf("approve past a moved base: %q", msg)
	}
	dec, _ = callOK[reviewResult](t, ann, "review", map[string]any{"action": "approve", "id": w.Proposal, "expected_version": 2})
	if dec.Proposals[0].Version != 3 {
		t.Fatalf("approve after resolving: %+v", dec)
	}
}

// TestReviewNeedsAdminKey: a write key's approve is the service's
// forbidden, a tool error, and approves nothing; the tool is listed all
// the same (tools/list is the same for everyone).
func TestReviewNeedsAdminKey(t *testing.T) {
	h := newHarness(t, service.Options{})
	propTok, _ := h.env.Key(t, "ws", "proj", "pat", memory.RolePropose)
	writeTok, _ := h.env.Key(t, "ws", "proj", "wes", memory.RoleWrite)
	adminTok, _ := h.env.Key(t, "ws", "proj", "ann", memory.RoleAdmin)
	pat, wes, ann := h.client(t, propTok), h.client(t, writeTok), h.client(t, adminTok)
	w, _ := callOK[service.WriteResult](t, pat, "remember", map[string]any{"slug": "notes/x", "content": "a proposal"})

	for _, args := range []map[string]any{
		{"action": "approve", "id": w.Proposal},
		{"action": "reject", "id": w.Proposal, "reason": "no"},
	} {
		if msg := callErr(t, wes, "review", args); !strings.HasPrefix(msg, "forbidden: ") {
			t.Errorf("%v with a write key: %q", args, msg)
		}
		if msg := callErr(t, pat, "review", args); !strings.HasPrefix(msg, "forbidden: ") {
			t.Errorf("%v by its own proposer: %q", args, msg)
		}
	}
	assertPending(t, ann, w.Proposal)
}

// TestReviewBadInput: each bad call is a clear tool error naming the
// problem, and decides nothing (invariant 6,
// docs/architecture.md#invariant-6-bad-input-changes-nothing).
func TestReviewBadInput(t *testing.T) {
	h := newHarness(t, service.Options{})
	propTok, _ := h.env.Key(t, "ws", "proj", "pat", memory.RolePropose)
	adminTok, _ := h.env.Key(t, "ws", "proj", "ann", memory.RoleAdmin)
	pat, ann := h.client(t, propTok), h.client(t, adminTok)
	w, _ := callOK[service.WriteResult](t, pat, "remember", map[string]any{"slug": "notes/x", "content": "a proposal"})
	id := w.Proposal

	cases := []struct {
		name string
		args map[string]any
		want []string // the first is the start of the error text
	}{
		{"unknown action", map[string]any{"action": "delete", "id": id}, []string{"invalid: ", "action", "delete", "list, approve or reject"}},
		{"missing action", map[string]any{"id": id}, []string{"invalid: ", "action"}},
		{"action not a string", map[string]any{"action": 1}, []string{"invalid: ", "action"}},
		{"approve without id", map[string]any{"action": "approve"}, []string{"invalid: ", "missing argument id"}},
		{"reject without id", map[string]any{"action": "reject", "reason": "no"}, []string{"invalid: ", "missing argument id"}},
		{"reject without reason", map[string]any{"action": "reject", "id": id}, []string{"invalid: ", "reason"}},
		{"reason on approve", map[string]any{"action": "approve", "id": id, "reason": "fine"}, []string{"invalid: ", "approve does not take reason"}},
		{"id on list", map[string]any{"action": "list", "id": id}, []string{"invalid: ", "list does not take id"}},
		{"content on reject", map[string]any{"action": "reject", "id": id, "reason": "no", "content": "x"}, []string{"invalid: ", "content"}},
		{"unknown argument", map[string]any{"action": "list", "agent": "mallory"}, []string{"invalid: ", "agent"}},
		{"id of another project", map[string]any{"action": "approve", "id": "ws.other.1"}, []string{"not_found: ", "ws.other.1"}},
		{"malformed id", map[string]any{"action": "approve", "id": "nonsense"}, []string{"not_found: ", "nonsense"}},
		{"project not the id's", map[string]any{"action": "approve", "id": id, "project": "ws/other"}, []string{"invalid: ", id, "ws/other"}},
		{"bad state", map[string]any{"action": "list", "state": "maybe"}, []string{"invalid: ", "state"}},
		{"blank edited content", map[string]any{"action": "approve", "id": id, "content": "   "}, []string{"invalid: ", "content"}},
		{"negative expected_version", map[string]any{"action": "approve", "id": id, "expected_version": -1}, []string{"invalid: ", "expected_version"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := callErr(t, ann, "review", tc.args)
			t.Log(msg)
			wantError(t, msg, tc.want)
			assertPending(t, ann, id)
		})
	}
}

// assertPending checks that id is the one proposal and still pending.
func assertPending(t *testing.T, reviewer *client.Client, id string) {
	t.Helper()
	page, _ := callOK[reviewResult](t, reviewer, "review", map[string]any{"action": "list", "state": "all"})
	if len(page.Proposals) != 1 || page.Proposals[0].ID != id || page.Proposals[0].State != "pending" {
		t.Fatalf("proposals changed: %+v", page.Proposals)
	}
}
