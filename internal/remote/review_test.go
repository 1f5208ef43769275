package remote_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/remote"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// TestProposalsCrossTheHop: proposing, listing, reading, rejecting and
// approving go to the workspace's owner; a forwarded approval queues its
// index refresh there before it answers, so a recall right after it finds
// the new version (docs/architecture.md#invariant-3-read-your-writes).
func TestProposalsCrossTheHop(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := search.NewRegistry(st, search.Options{})
	srv := httptest.NewServer(remote.Handler(service.NewOwnerBudgeted(st, st, service.Options{}), reg,
		remote.ServerOptions{Secret: secret, Node: "node-a", Owns: func(context.Context, string, int64) error { return nil }}))
	t.Cleanup(func() {
		srv.Close()
		_ = reg.Close()
		_ = st.Close()
	})
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	r := router(srv.URL, &routes)
	if err := r.SetReview(ctx, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Review(ctx, ref); err != nil || got != memory.ReviewAgents {
		t.Fatalf("review over the hop: %q, %v", got, err)
	}
	p, err := r.Append(ctx, ref, memory.Write{Slug: "a", Title: "t", Content: "quokka sightings", Agent: "w", Review: memory.ProposeIfReviewed})
	if err != nil || p.Proposal == 0 {
		t.Fatalf("proposal over the hop: %+v, %v", p, err)
	}
	q, err := r.Append(ctx, ref, memory.Write{Slug: "b", Title: "t", Content: "x", Agent: "w", Review: memory.ProposeAlways})
	if err != nil {
		t.Fatal(err)
	}
	if ps, cur, err := r.Proposals(ctx, ref, memory.ProposalPending, "w", 0, 10); err != nil || len(ps) != 2 || len(cur) != 2 || ps[0].Project != ref {
		t.Fatalf("proposals over the hop: %+v, %v", ps, err)
	}
	if n, err := r.PendingCount(ctx, ref); err != nil || n != 2 {
		t.Errorf("pending count over the hop: %d, %v", n, err)
	}
	if rej, err := r.Reject(ctx, ref, q.Proposal, "rita", "", "no"); err != nil || rej.State != memory.ProposalRejected || rej.Project != ref {
		t.Errorf("reject over the hop: %+v, %v", rej, err)
	}
	// The owner's index is open and knows nothing of the proposal.
	if hits, err := reg.SearchProjects(ctx, []memory.ProjectRef{ref}, memory.SearchQuery{Text: "quokka", Limit: 5}); err != nil || len(hits) != 0 {
		t.Fatalf("recall of a pending proposal at the owner: %+v, %v; want nothing", hits, err)
	}
	res, err := r.Approve(ctx, ref, p.Proposal, "rita", memory.Write{})
	if err != nil || res.Version != 1 {
		t.Fatalf("approve over the hop: %+v, %v", res, err)
	}
	if got, _, err := r.Proposal(ctx, ref, p.Proposal); err != nil || got.State != memory.ProposalApproved || got.Version != 1 {
		t.Errorf("approved proposal over the hop: %+v, %v", got, err)
	}
	hits, err := reg.SearchProjects(ctx, []memory.ProjectRef{ref}, memory.SearchQuery{Text: "quokka", Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Version != 1 {
		t.Errorf("recall at the owner right after a forwarded approval: %+v, %v; want version 1", hits, err)
	}
	if _, _, err := r.Proposal(ctx, memory.ProjectRef{Workspace: "team", Project: "q"}, p.Proposal); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("proposal of another project over the hop: %v, want not_found", err)
	}
}
