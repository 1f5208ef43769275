package remote_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/remote"
	"munin/internal/service"
	"munin/internal/store"
)

// entryNode is a cluster node without data of its own: its service's data
// and index halves are a router whose every call goes over the internal
// hop to the owner at url.
type entryNode struct {
	svc    *service.Service
	router *remote.Router
	routes *atomic.Int64
}

func newEntryNode(t *testing.T, st *store.Store, url string) entryNode {
	t.Helper()
	var routes atomic.Int64
	r := router(url, &routes)
	svc := service.New(service.Split{ControlStore: st, DataStore: r}, r, service.Options{BudgetAtOwner: r, SearchLogOff: true})
	t.Cleanup(func() { svc.Close() })
	return entryNode{svc: svc, router: r, routes: &routes}
}

// callerOf makes a key of role for agent in ref and authenticates it.
func callerOf(t *testing.T, n entryNode, ref memory.ProjectRef, agent string, role memory.Role) memory.Caller {
	t.Helper()
	ctx := context.Background()
	token, _, err := n.svc.CreateKey(ctx, ref, agent, role)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.svc.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// proposalNumber is the number at the end of a proposal id.
func proposalNumber(t *testing.T, id string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(id[strings.LastIndex(id, ".")+1:], 10, 64)
	if err != nil {
		t.Fatalf("proposal id %q: %v", id, err)
	}
	return n
}

// The proposal methods go to the workspace's owner: a proposal made
// through one entry node is listed, read, approved and rejected through
// another, the approval is the proposer's next version (once, however
// often it is sent) and a recall through the second node finds it at once;
// an id of another project is not_found across the hop, as a missing one,
// and changes nothing there.
func TestProposalsRoutedToOwner(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ctx := context.Background()
	p := memory.ProjectRef{Workspace: "team", Project: "p"}
	q := memory.ProjectRef{Workspace: "team", Project: "q"}
	for _, ref := range []memory.ProjectRef{p, q} {
		if _, err := st.EnsureProject(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	x, y := newEntryNode(t, st, url), newEntryNode(t, st, url)
	scout := callerOf(t, x, p, "scout", memory.RolePropose)
	lead := callerOf(t, y, p, "lead", memory.RoleAdmin)
	other := callerOf(t, x, q, "other", memory.RolePropose)

	// Proposed through x.
	res, err := x.svc.Remember(ctx, scout, service.RememberRequest{Project: "team/p", Slug: "notes/a", Content: "the heliotrope plan, first draft"})
	if err != nil || res.State != memory.ProposalPending || res.Proposal == "" || res.Version != 0 || res.BaseVersion == nil || *res.BaseVersion != 0 {
		t.Fatalf("propose through x: %+v %v; want pending with an id and base 0", res, err)
	}
	first := res.Proposal

	// Listed and read through y.
	list, err := y.svc.Proposals(ctx, lead, service.ProposalsRequest{Project: "team/p"})
	if err != nil || len(list.Proposals) != 1 || list.Proposals[0].ID != first || list.Proposals[0].Agent != "scout" ||
		list.Proposals[0].Content != "the heliotrope plan, first draft" {
		t.Fatalf("proposals through y: %+v %v; want %s by scout", list, err, first)
	}
	if d, err := y.svc.Proposal(ctx, lead, first); err != nil || d.Proposal.Slug != "notes/a" || d.Proposal.State != memory.ProposalPending {
		t.Fatalf("proposal %s through y: %+v %v", first, d, err)
	}
	if n, err := y.svc.PendingCount(ctx, lead, p); err != nil || n != 1 {
		t.Fatalf("pending count through y: %d %v, want 1", n, err)
	}

	// Approved through y: the proposer's version 1, once.
	ap, err := y.svc.Approve(ctx, lead, first, service.ApproveRequest{})
	if err != nil || ap.Version != 1 {
		t.Fatalf("approve %s through y: %+v %v; want version 1", first, ap, err)
	}
	if _, err := x.svc.Approve(ctx, lead, first, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeConflict {
		t.Fatalf("approving %s again through x: %v; want conflict", first, err)
	}
	e, err := x.svc.Get(ctx, scout, service.GetRequest{Project: "team/p", Slug: "notes/a"})
	if err != nil || e.Version != 1 || e.Agent != "scout" || e.Content != "the heliotrope plan, first draft" {
		t.Fatalf("get through x after the approval: %+v %v; want version 1 by scout", e, err)
	}
	if h, err := y.svc.History(ctx, lead, service.HistoryRequest{Project: "team/p", Slug: "notes/a"}); err != nil || len(h.Versions) != 1 {
		t.Fatalf("history after approving twice: %+v %v; want one version", h, err)
	}
	// Read-your-writes across the hop: the approved version is found at once
	// (invariant 3, docs/architecture.md#invariant-3-read-your-writes).
	hits, err := y.svc.Recall(ctx, lead, service.RecallRequest{Project: "team/p", Query: "heliotrope"})
	if err != nil || len(hits.Hits) != 1 || hits.Hits[0].Slug != "notes/a" {
		t.Fatalf("recall through y right after the approval: %+v %v; want notes/a", hits, err)
	}

	// Rejected through y, the reason read by the proposer through x.
	res, err = x.svc.Remember(ctx, scout, service.RememberRequest{Project: "team/p", Slug: "notes/a", Content: "second draft"})
	if err != nil || res.State != memory.ProposalPending || *res.BaseVersion != 1 {
		t.Fatalf("second proposal: %+v %v; want pending on base 1", res, err)
	}
	second := res.Proposal
	if v, err := y.svc.Reject(ctx, lead, second, service.RejectRequest{Reason: "not yet"}); err != nil || v.State != memory.ProposalRejected {
		t.Fatalf("reject %s through y: %+v %v", second, v, err)
	}
	if d, err := x.svc.Proposal(ctx, scout, second); err != nil || d.Proposal.State != memory.ProposalRejected || d.Proposal.Reason != "not yet" ||
		d.Proposal.DecidedBy != "lead" {
		t.Fatalf("the proposer reads %s through x: %+v %v; want rejected by lead, not yet", second, d, err)
	}
	if e, err := y.svc.Get(ctx, lead, service.GetRequest{Project: "team/p", Slug: "notes/a"}); err != nil || e.Version != 1 {
		t.Fatalf("a rejection wrote: %+v %v", e, err)
	}

	// Another project's proposal: not_found through p's id, both at the
	// service and at the router itself, and it stays pending.
	res, err = x.svc.Remember(ctx, other, service.RememberRequest{Project: "team/q", Slug: "notes/b", Content: "q's plan"})
	if err != nil || res.State != memory.ProposalPending {
		t.Fatalf("propose in q: %+v %v", res, err)
	}
	qid, qn := res.Proposal, proposalNumber(t, res.Proposal)
	asP := service.ProposalID(p, qn)
	missing := service.ProposalID(p, qn+1000)
	for _, id := range []string{asP, qid, missing} {
		_, errG := y.svc.Proposal(ctx, lead, id)
		_, errA := y.svc.Approve(ctx, lead, id, service.ApproveRequest{})
		_, errR := y.svc.Reject(ctx, lead, id, service.RejectRequest{Reason: "no"})
		for what, err := range map[string]error{"proposal": errG, "approve": errA, "reject": errR} {
			if memory.ErrorCode(err) != memory.CodeNotFound || !strings.Contains(err.Error(), "proposal") {
				t.Errorf("%s %s by p's admin through y: %v; want the not_found of a missing proposal", what, id, err)
			}
		}
	}
	if _, _, err := y.router.Proposal(ctx, p, qn); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("router: proposal %d of q read as p's: %v; want not_found across the hop", qn, err)
	}
	if _, err := y.router.Approve(ctx, p, qn, "lead", memory.Write{}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("router: proposal %d of q approved as p's: %v; want not_found across the hop", qn, err)
	}
	if _, err := y.router.Reject(ctx, p, qn, "lead", "", "no"); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("router: proposal %d of q rejected as p's: %v; want not_found across the hop", qn, err)
	}
	if pr, _, err := st.Proposal(ctx, q, qn); err != nil || pr.State != memory.ProposalPending {
		t.Errorf("q's proposal after the refused calls: %+v %v; want still pending", pr, err)
	}
	if _, _, err := st.Get(ctx, q, "notes/b", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("q's proposal was applied: %v", err)
	}
	if _, _, err := st.Get(ctx, p, "notes/b", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("q's proposal was applied in p: %v", err)
	}

	// Every one of these went over the hop: neither entry node has data.
	if x.routes.Load() == 0 || y.routes.Load() == 0 {
		t.Errorf("routes looked up: x %d, y %d; want both above 0", x.routes.Load(), y.routes.Load())
	}
}
