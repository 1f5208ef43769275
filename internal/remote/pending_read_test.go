package remote_test

import (
	"context"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
)

// TestPendingOfCrossesTheHop: an agent's pending proposals are read at the
// workspace's owner, with their project, content and tags, so that a
// recall on any node keeps read-your-writes for what the agent proposed
// (docs/architecture.md#invariant-3-read-your-writes); another agent's are
// not among them.
func TestPendingOfCrossesTheHop(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	ctx := context.Background()
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	r := router(url, new(atomic.Int64)) // it has no store: what it answers comes from the owner
	mine, err := r.Append(ctx, ref, memory.Write{Slug: "a", Title: "t", Content: "quokka sightings", Tags: []string{"zoo"},
		Agent: "pia", Review: memory.ProposeAlways})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, ref, memory.Write{Slug: "b", Title: "t", Content: "x", Agent: "otto", Review: memory.ProposeAlways}); err != nil {
		t.Fatal(err)
	}
	ps, err := r.PendingOf(ctx, ref, "pia")
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending proposals over the hop: %+v, %v; want pia's one", ps, err)
	}
	if p := ps[0]; p.ID != mine.Proposal || p.Project != ref || p.Agent != "pia" || p.Content != "quokka sightings" ||
		len(p.Tags) != 1 || p.Tags[0] != "zoo" || p.State != memory.ProposalPending {
		t.Errorf("pending proposal over the hop: %+v", p)
	}
	if ps, err := r.PendingOf(ctx, ref, "nobody"); err != nil || len(ps) != 0 {
		t.Errorf("an agent without proposals over the hop: %+v, %v", ps, err)
	}
}
