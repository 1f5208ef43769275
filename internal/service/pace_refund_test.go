package service

import (
	"context"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestPaceRefundAfterTimePassed: a write that fails gives its bytes back to
// the pace even when the clock moved between reserve and release (as it
// always does: the store call sits in between), and the give-back grants no
// more than it took — the refill of the time in between is not counted twice.
func TestPaceRefundAfterTimePassed(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	hour := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Hour)
	clock := &fakeClock{now: hour.Add(5 * time.Minute)}
	const perHour = 3600 << 10 // 1 KiB per second
	b := newBudget(&auditStore{}, limits{writes: 1000, bytes: perHour}, clock.Now)
	b.paceFloor = 0 // burst: a minute's worth, 60 KiB
	ctx := context.Background()
	burst := b.paceBurst(perHour)

	r, err := b.reserve(ctx, ref, burst)
	if err != nil {
		t.Fatalf("the whole burst at once: %v", err)
	}
	clock.set(clock.Now().Add(time.Millisecond))
	b.release(ref, r, burst)
	if _, err := b.reserve(ctx, ref, burst-(2<<10)); err != nil {
		t.Fatalf("after a failed write of the whole burst gave its bytes back: %v", err)
	}
	// Spent again; 10 s later 10 KiB have refilled plus the 2 KiB left.
	clock.set(clock.Now().Add(10 * time.Second))
	r, err = b.reserve(ctx, ref, 12<<10)
	if err != nil {
		t.Fatalf("after 10 s of refill: %v", err)
	}
	clock.set(clock.Now().Add(10 * time.Second)) // 10 KiB more refill
	b.release(ref, r, 12<<10)                    // and 12 KiB back: 22 KiB, not more
	if _, err := b.reserve(ctx, ref, 23<<10); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("a give-back after 10 s granted more than it took: %v, want budget_exhausted", err)
	}
	if _, err := b.reserve(ctx, ref, 22<<10); err != nil {
		t.Fatalf("what was given back and refilled: %v", err)
	}
}

// TestPaceRefundConcurrent: many goroutines reserving and releasing on one
// project, with the clock moving, end with the pace full again.
func TestPaceRefundConcurrent(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	hour := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Hour)
	clock := &fakeClock{now: hour.Add(5 * time.Minute)}
	const perHour = 3600 << 10
	b := newBudget(&auditStore{}, limits{writes: 1 << 30, bytes: perHour}, clock.Now)
	b.paceFloor = 0
	ctx := context.Background()
	var wg sync.WaitGroup
	var tick sync.Mutex
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r, err := b.reserve(ctx, ref, 1<<10)
				tick.Lock()
				clock.set(clock.Now().Add(time.Microsecond))
				tick.Unlock()
				if err == nil {
					b.release(ref, r, 1<<10)
				}
			}
		}()
	}
	wg.Wait()
	if _, err := b.reserve(ctx, ref, b.paceBurst(perHour)); err != nil {
		t.Fatalf("after every write gave its bytes back: %v", err)
	}
}
