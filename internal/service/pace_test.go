package service_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestByteBudgetIsPaced: a project cannot write its hour's bytes in one
// burst: a minute's worth (at least twice the largest content) goes at once,
// then the bytes refill at the budget per hour. The refusal says when to retry; a
// write that fails (a conflict) gives its bytes back, and another project
// has its own pace.
func TestByteBudgetIsPaced(t *testing.T) {
	var mu sync.Mutex
	at := servicetest.FutureHour().Add(5 * time.Minute)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	env := servicetest.New(t, service.Options{DefaultWriteBudgetBytes: 16 << 20, Now: now})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	_, other := env.Key(t, "w", "q", "agent", memory.RoleWrite)
	content := strings.Repeat("x", 64<<10)
	remember := func(k memory.Caller, slug string, expected *int) error {
		_, err := env.Svc.Remember(ctx, k, service.RememberRequest{Slug: slug, Content: content, ExpectedVersion: expected})
		return err
	}
	for i := range 4 { // 16 MiB / 60 ≈ 273 KiB: four writes of 64 KiB
		if err := remember(key, fmt.Sprintf("s%d", i), nil); err != nil {
			t.Fatalf("write %d of the burst: %v", i+1, err)
		}
	}
	err := remember(key, "over", nil)
	var merr *memory.Error
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), "faster than they refill") {
		t.Fatalf("write past the burst: %v, want budget_exhausted naming the pace", err)
	}
	if !errors.As(err, &merr) || merr.RetryAfter < time.Second || merr.RetryAfter > 30*time.Second {
		t.Fatalf("Retry-After %s, want the time 64 KiB take to refill (about 14 s)", merr.RetryAfter)
	}
	if err := remember(other, "elsewhere", nil); err != nil {
		t.Fatalf("another project while the first is paced: %v", err)
	}
	mu.Lock()
	at = at.Add(15 * time.Second) // 64 KiB refill in 14 s at 16 MiB/h
	mu.Unlock()
	zero := 0
	if err := remember(key, "s0", &zero); memory.ErrorCode(err) != memory.CodeConflict {
		t.Fatalf("conditional write on an existing slug: %v, want conflict", err)
	}
	if err := remember(key, "after", nil); err != nil {
		t.Fatalf("write after the refill (the conflict gave its bytes back): %v", err)
	}
	if err := remember(key, "again", nil); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("second write after one refill: %v, want budget_exhausted", err)
	}
}

// TestBudgetChangeKeepsThePace: a project admin who changes the byte budget
// back and forth gets no fresh burst from it — the pace keeps what was
// spent, so the hour's bytes still cannot go in one burst.
func TestBudgetChangeKeepsThePace(t *testing.T) {
	at := servicetest.FutureHour().Add(5 * time.Minute)
	env := servicetest.New(t, service.Options{DefaultWriteBudgetBytes: 16 << 20, Now: func() time.Time { return at }})
	_, admin := env.Key(t, "w", "p", "agent", memory.RoleAdmin)
	content := strings.Repeat("x", 64<<10)
	n := 0
	remember := func() error {
		n++
		_, err := env.Svc.Remember(ctx, admin, service.RememberRequest{Slug: fmt.Sprintf("s%d", n), Content: content})
		return err
	}
	for i := range 4 {
		if err := remember(); err != nil {
			t.Fatalf("write %d of the burst: %v", i+1, err)
		}
	}
	if err := remember(); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("write past the burst: %v, want budget_exhausted", err)
	}
	for i, bytes := range []int{16<<20 - 1, 16 << 20, 8 << 20} {
		if err := env.Svc.SetWriteBudgets(ctx, admin, "", nil, &bytes); err != nil {
			t.Fatalf("budget change %d: %v", i+1, err)
		}
		if err := remember(); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
			t.Fatalf("write after budget change %d to %d bytes/h: %v, want budget_exhausted (a fresh burst)", i+1, bytes, err)
		}
	}
}
