package service

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// budgetStore answers the two questions a budget asks of the store.
type budgetStore struct {
	Store
	limit int
}

func (s budgetStore) Project(context.Context, memory.ProjectRef) (memory.ProjectInfo, error) {
	return memory.ProjectInfo{WriteBudget: s.limit, WriteBudgetBytes: 1 << 40}, nil
}

func (budgetStore) WrittenSince(context.Context, memory.ProjectRef, time.Time) (int, int, error) {
	return 0, 0, nil
}

// noLimits leaves the server defaults out of tests that set a project's limits.
var noLimits = limits{}

// TestBudgetReserveRacingForget: a budget change (forget) between a
// reserve's load and its spending once left the reserve a nil window and a
// panic. Many reserves and usages race a stream of forgets here.
func TestBudgetReserveRacingForget(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	b := newBudget(budgetStore{limit: 1 << 30}, noLimits, time.Now)
	ctx := context.Background()
	stop := make(chan struct{})
	var forgets sync.WaitGroup
	forgets.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				b.forget(ref)
			}
		}
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5000 {
				if _, err := b.reserve(ctx, ref, 0); err != nil {
					t.Error(err)
					return
				}
				if _, err := b.usage(ctx, ref); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	forgets.Wait()
}

// TestBudgetExactUnderConcurrency: of many concurrent reserves exactly the
// limit succeed, and the rest are told budget_exhausted.
func TestBudgetExactUnderConcurrency(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	const limit = 100
	b := newBudget(budgetStore{limit: limit}, noLimits, time.Now)
	var ok, exhausted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				_, err := b.reserve(context.Background(), ref, 0)
				switch {
				case err == nil:
					ok.Add(1)
				case memory.ErrorCode(err) == memory.CodeBudgetExhausted:
					exhausted.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != limit || exhausted.Load() != 16*20-limit {
		t.Fatalf("%d reserves succeeded and %d were refused; want %d and %d", ok.Load(), exhausted.Load(), limit, 16*20-limit)
	}
	if w, err := b.usage(context.Background(), ref); err != nil || w.used != limit || w.limit.writes != limit {
		t.Fatalf("usage = %d of %d (%v), want %d of %d", w.used, w.limit.writes, err, limit, limit)
	}
}

// TestReleaseOnlyToItsWindow: a write reserved in one window and given back
// after the window was replaced (a budget change, a new hour) must not lower
// the new window's count, which never included it.
func TestReleaseOnlyToItsWindow(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	b := newBudget(budgetStore{limit: 10}, noLimits, time.Now)
	ctx := context.Background()
	old, err := b.reserve(ctx, ref, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.forget(ref) // a budget change: the next reserve reloads the window
	if _, err := b.reserve(ctx, ref, 0); err != nil {
		t.Fatal(err)
	}
	b.release(ref, old, 0)
	if w, _ := b.usage(ctx, ref); w.used != 1 {
		t.Fatalf("used = %d after giving back a write of the replaced window, want 1", w.used)
	}
}
