package remote_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// A project's write budget is counted once, at its workspace's owner, however
// many nodes its writes come through: two entry nodes (services whose data
// half forwards to the owner, as on a cluster node) writing concurrently get
// exactly the budget between them, and both report the same usage.
func TestBudgetCountsOnceAcrossEntryNodes(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ctx := context.Background()
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	const budget = 12
	if err := st.SetWriteBudget(ctx, ref, budget); err != nil {
		t.Fatal(err)
	}
	var entries []*service.Service
	var callers []memory.Caller
	for range 2 {
		var routes atomic.Int64
		r := router(url, &routes)
		svc := service.New(service.Split{ControlStore: st, DataStore: r}, r, service.Options{BudgetAtOwner: r, SearchLogOff: true})
		t.Cleanup(func() { svc.Close() })
		token, _, err := svc.CreateKey(ctx, ref, "agent", memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		c, err := svc.Authenticate(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		entries, callers = append(entries, svc), append(callers, c)
	}
	var written, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			node := g % 2
			for i := range 5 {
				_, err := entries[node].Remember(ctx, callers[node], service.RememberRequest{
					Slug: fmt.Sprintf("notes/g%d-%d", g, i), Content: "a note"})
				switch {
				case err == nil:
					written.Add(1)
				case memory.ErrorCode(err) == memory.CodeBudgetExhausted:
					refused.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if written.Load() != budget || refused.Load() != 40-budget {
		t.Fatalf("%d writes through two nodes went through and %d were refused; want %d and %d (one budget of %d)",
			written.Load(), refused.Load(), budget, 40-budget, budget)
	}
	for i, svc := range entries {
		used, limit, err := svc.WriteUsage(ctx, ref)
		if err != nil || used != budget || limit != budget {
			t.Errorf("node %d reports %d of %d writes used (%v); want %d of %d", i, used, limit, err, budget, budget)
		}
	}
}
