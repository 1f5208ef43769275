package service_test

import (
	"fmt"
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestConcurrentProposeApproveRecall: proposers propose, a reviewer
// approves each proposal while others land, and a reader recalls
// throughout: every approved proposal is exactly one version, versions have
// no gaps
// (docs/architecture.md#invariant-2-one-version-per-remember-no-gaps), and
// the reader never sees a pending proposal.
func TestConcurrentProposeApproveRecall(t *testing.T) {
	r := newReviewEnv(t, service.Options{BudgetOff: true, RecallRate: -1})
	const proposers, each = 4, 10
	ids := make(chan string, proposers*each)
	var wg, readers sync.WaitGroup
	stop := make(chan struct{})
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := r.env.Svc.Recall(ctx, r.reed, service.RecallRequest{Query: "shared note"})
			if err != nil {
				t.Error(err)
				return
			}
			for _, h := range got.Hits {
				if h.State == memory.ProposalPending {
					t.Errorf("reed's recall returned a pending proposal: %+v", h)
				}
			}
		}
	}()
	for p := range proposers {
		_, c := r.env.Key(t, "acme", "rev", fmt.Sprintf("prop-%d", p), memory.RolePropose)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := r.env.Svc.Remember(ctx, c, service.RememberRequest{Slug: fmt.Sprintf("n/%d", i%3), Content: fmt.Sprintf("shared note %d %d", p, i)})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- res.Proposal
			}
		}()
	}
	versions := map[string]int{}
	var approver sync.WaitGroup
	approver.Add(1)
	go func() {
		defer approver.Done()
		for id := range ids {
			// The reviewer looked at the current version before approving.
			d, err := r.env.Svc.Proposal(ctx, r.rita, id)
			if err != nil {
				t.Error(err)
				return
			}
			cur := d.Proposal.CurrentVersion
			out, err := r.env.Svc.Approve(ctx, r.rita, id, service.ApproveRequest{ExpectedVersion: &cur})
			if err != nil {
				t.Errorf("approve %s: %v", id, err)
				continue
			}
			versions[id] = out.Version
		}
	}()
	wg.Wait()
	close(ids)
	approver.Wait()
	close(stop)
	readers.Wait()
	total := 0
	for i := range 3 {
		h, err := r.env.Svc.History(ctx, r.reed, service.HistoryRequest{Slug: fmt.Sprintf("n/%d", i), Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range h.Versions {
			if v.Version != len(h.Versions)-j || v.Agent == "rita" {
				t.Fatalf("n/%d: history %+v has a gap or the reviewer as agent", i, h.Versions)
			}
		}
		total += len(h.Versions)
	}
	if total != proposers*each || len(versions) != proposers*each {
		t.Errorf("%d versions, %d approvals for %d proposals", total, len(versions), proposers*each)
	}
	if n, _ := r.env.Svc.PendingCount(ctx, r.rita, rev); n != 0 {
		t.Errorf("%d proposals still pending", n)
	}
}
