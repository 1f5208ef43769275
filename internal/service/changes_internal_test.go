package service

import (
	"errors"
	"testing"

	"munin/internal/feedcursor"
	"munin/internal/memory"
)

// TestFailedWorkspaceKeepsItsPosition: a workspace whose read failed keeps
// its whole position in the next cursor — identity included, so that a
// file replaced meanwhile is still found out — and the positions of
// workspaces the caller does not reach now are kept beside it.
func TestFailedWorkspaceKeepsItsPosition(t *testing.T) {
	pos := feedcursor.Position{Workspace: "beta", Identity: "id-beta", After: 41, Stamp: 1234}
	other := feedcursor.Position{Workspace: "gone", Identity: "id-gone", After: 7, Stamp: 99}
	w := &feedWorkspace{name: "beta", pos: pos, err: memory.Errorf(memory.CodeUnavailable, "moving")}
	ok := &feedWorkspace{name: "acme", pos: feedcursor.Position{Workspace: "acme", Floor: 5},
		page: memory.FeedPage{Identity: "id-acme", Complete: true, EndID: 9, EndStamp: 900}}
	in := feedcursor.Cursor{Minted: 5, Positions: []feedcursor.Position{pos, other}}
	got := nextCursor(in, []*feedWorkspace{ok, w}, 10)
	want := []feedcursor.Position{{Workspace: "acme", Identity: "id-acme", After: 9, Stamp: 900}, pos, other}
	if len(got.Positions) != len(want) {
		t.Fatalf("positions %+v, want %+v", got.Positions, want)
	}
	for i := range want {
		if got.Positions[i] != want[i] {
			t.Errorf("position %d: %+v, want %+v", i, got.Positions[i], want[i])
		}
	}
	if !workspaceFailure(w.err) || workspaceFailure(memory.Errorf(memory.CodeInvalid, "expired")) || !workspaceFailure(memory.Internal(errors.New("x"))) {
		t.Error("workspaceFailure: unavailable and internal are one workspace's failure; invalid (the caller's) is not")
	}
}
