package service

import (
	"context"
	"testing"
	"time"

	"munin/internal/memory"
)

// ownerClock is a clock standing in the hour of now.
func ownerClock() *fakeClock {
	return &fakeClock{now: time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)}
}

// spendTo takes n writes from b and stamps them into the audit log, as the
// store's commit does.
func spendTo(t *testing.T, b *budget, st *auditStore, clock *fakeClock, ref memory.ProjectRef, n int) {
	t.Helper()
	for i := range n {
		if _, err := b.reserve(context.Background(), ref, 1); err != nil {
			t.Fatalf("write %d of %d: %v", i+1, n, err)
		}
		st.write(clock.Now(), 1)
	}
}

// TestForgetWorkspaceCountsTheHourAgain: a cluster node that owns a
// workspace again after other owners wrote to it must count the hour from
// the audit log, not from what it counted before (which the budget keeps
// for the hour otherwise). Only the named workspace is dropped.
func TestForgetWorkspaceCountsTheHourAgain(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	st := &auditStore{info: memory.ProjectInfo{WriteBudget: 10, WriteBudgetBytes: 1 << 20}}
	clock := ownerClock()
	d := NewOwnerBudgeted(st, st, Options{Now: clock.Now})
	spendTo(t, d.budget, st, clock, ref, 3)
	for range 5 { // the owners in between
		st.write(clock.Now(), 1)
	}
	d.ForgetWorkspace("other")
	if u, err := d.BudgetUsage(context.Background(), ref); err != nil || u.Writes != 3 {
		t.Fatalf("after forgetting another workspace: %d writes used (%v), want the 3 still counted", u.Writes, err)
	}
	d.ForgetWorkspace(ref.Workspace)
	if u, err := d.BudgetUsage(context.Background(), ref); err != nil || u.Writes != 8 || u.WriteLimit != 10 {
		t.Fatalf("after the workspace was opened again: %d of %d writes used (%v), want 8 of 10", u.Writes, u.WriteLimit, err)
	}
	spendTo(t, d.budget, st, clock, ref, 2)
	if _, err := d.budget.reserve(context.Background(), ref, 1); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("11th write of the hour: %v, want budget_exhausted", err)
	}
}

// gatedAudit holds its first WrittenSince after counting, until released: a
// load that counted a workspace file before it was opened anew.
type gatedAudit struct {
	*auditStore
	entered, release chan struct{}
	calls            int
}

func (g *gatedAudit) WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (int, int, error) {
	n, bytes, err := g.auditStore.WrittenSince(ctx, ref, since)
	if g.calls++; g.calls == 1 {
		close(g.entered)
		<-g.release
	}
	return n, bytes, err
}

// TestLoadAcrossReopenIsNotKept: a window counted before the workspace's
// file was opened anew (ForgetWorkspace meanwhile) is not kept; the budget
// counts again from the new file.
func TestLoadAcrossReopenIsNotKept(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	st := &gatedAudit{auditStore: &auditStore{info: memory.ProjectInfo{WriteBudget: 10, WriteBudgetBytes: 1 << 20}},
		entered: make(chan struct{}), release: make(chan struct{})}
	clock := ownerClock()
	d := NewOwnerBudgeted(st, st, Options{Now: clock.Now})
	got := make(chan BudgetUsage, 1)
	go func() {
		u, err := d.BudgetUsage(context.Background(), ref)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	<-st.entered // counted 0 in the old file
	for range 4 {
		st.write(clock.Now(), 1) // the new file holds 4
	}
	d.ForgetWorkspace(ref.Workspace)
	close(st.release)
	if u := <-got; u.Writes != 4 {
		t.Fatalf("usage after a load that spanned the reopening: %d writes, want the new file's 4", u.Writes)
	}
}

// TestOwnerBudgetReadsLimitsEveryWrite: an owner's budget obeys a limit
// changed elsewhere (another node) at the next write; a single server's
// keeps its limit until it is told (Forget), as it changes limits itself.
func TestOwnerBudgetReadsLimitsEveryWrite(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	for _, owner := range []bool{true, false} {
		st := &auditStore{info: memory.ProjectInfo{WriteBudget: 5, WriteBudgetBytes: 1 << 20}}
		clock := ownerClock()
		d := newBudgeted(st, st, Options{Now: clock.Now}, owner)
		spendTo(t, d.budget, st, clock, ref, 2)
		st.info.WriteBudget = 2
		_, err := d.budget.reserve(context.Background(), ref, 1)
		if owner && memory.ErrorCode(err) != memory.CodeBudgetExhausted {
			t.Fatalf("owner's budget, 3rd write after the limit fell to 2: %v, want budget_exhausted", err)
		}
		if !owner {
			if err != nil {
				t.Fatalf("single server's budget before Forget: %v, want the cached limit of 5", err)
			}
			d.Forget(ref)
			if _, err := d.budget.reserve(context.Background(), ref, 1); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
				t.Fatalf("single server's budget after Forget: %v, want budget_exhausted", err)
			}
		}
	}
}
