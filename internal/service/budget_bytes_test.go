package service

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// auditStore is an audit log in memory: every write the budget lets through
// is stamped with the clock, and WrittenSince counts the stamps at or after
// since, as the store counts audit rows.
type auditStore struct {
	Store
	info memory.ProjectInfo

	mu    sync.Mutex
	at    []time.Time
	sizes []int
}

func (s *auditStore) Project(context.Context, memory.ProjectRef) (memory.ProjectInfo, error) {
	return s.info, nil
}

func (s *auditStore) WrittenSince(_ context.Context, _ memory.ProjectRef, since time.Time) (int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, bytes := 0, 0
	for i, at := range s.at {
		if !at.Before(since) {
			n++
			bytes += s.sizes[i]
		}
	}
	return n, bytes, nil
}

func (s *auditStore) write(at time.Time, size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, at)
	s.sizes = append(s.sizes, size)
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// TestBudgetWindowOfNewHourCountsOnlyThatHour: the window of a new hour is
// seeded from the audit log since that hour began, not from the previous
// hour's writes; a fresh budget (a restart) in the new hour likewise.
func TestBudgetWindowOfNewHourCountsOnlyThatHour(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	st := &auditStore{info: memory.ProjectInfo{WriteBudget: 3, WriteBudgetBytes: 100}}
	hour := time.Now().UTC().Truncate(time.Hour)
	clock := &fakeClock{now: hour.Add(59 * time.Minute)}
	spend := func(b *budget, size int) error {
		_, err := b.reserve(context.Background(), ref, size)
		if err == nil {
			st.write(clock.Now(), size)
		}
		return err
	}
	b := newBudget(st, noLimits, clock.Now)
	for i := range 3 {
		if err := spend(b, 30); err != nil {
			t.Fatalf("write %d of the first hour: %v", i+1, err)
		}
	}
	if err := spend(b, 1); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("4th write of the first hour: %v, want budget_exhausted", err)
	}

	// The next hour: the writes of 00:59 do not count, neither in the
	// running budget nor in one that starts afresh (a restart).
	clock.set(hour.Add(time.Hour))
	restarted := newBudget(st, noLimits, clock.Now)
	for name, b := range map[string]*budget{"running": b, "restarted": restarted} {
		w, err := b.usage(context.Background(), ref)
		if err != nil || w.used != 0 || w.bytes != 0 || !w.start.Equal(hour.Add(time.Hour)) {
			t.Fatalf("%s budget at the start of the next hour: %d writes, %d bytes from %s (%v); want 0, 0 from %s",
				name, w.used, w.bytes, w.start, err, hour.Add(time.Hour))
		}
	}
	for i := range 3 {
		if err := spend(b, 30); err != nil {
			t.Fatalf("write %d of the next hour: %v", i+1, err)
		}
	}
	// Seeded from this hour's writes, a budget started now has none left.
	if err := spend(newBudget(st, noLimits, clock.Now), 1); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("a budget started after 3 writes of this hour: %v, want budget_exhausted", err)
	}
}

// TestByteBudget: content bytes are budgeted beside the count; the refusal
// names the bytes and the reset, a write larger than the whole budget is
// too_large, and a released write gives its bytes back.
func TestByteBudget(t *testing.T) {
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	st := &auditStore{info: memory.ProjectInfo{WriteBudget: 100}}
	hour := time.Now().UTC().Truncate(time.Hour)
	clock := &fakeClock{now: hour.Add(40 * time.Minute)}
	b := newBudget(st, limits{writes: 1, bytes: 100}, clock.Now)
	ctx := context.Background()

	if _, err := b.reserve(ctx, ref, 60); err != nil {
		t.Fatal(err)
	}
	_, err := b.reserve(ctx, ref, 50)
	var me *memory.Error
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Fatalf("write past the byte budget: %v, want budget_exhausted", err)
	}
	me = err.(*memory.Error)
	reset := hour.Add(time.Hour).Format(time.RFC3339)
	for _, want := range []string{"60 of its 100 bytes", "has 50", "resets at " + reset} {
		if !strings.Contains(me.Message, want) {
			t.Errorf("message %q does not say %q", me.Message, want)
		}
	}
	if me.RetryAfter != 20*time.Minute {
		t.Errorf("RetryAfter = %s, want 20m", me.RetryAfter)
	}
	if _, err := b.reserve(ctx, ref, 101); memory.ErrorCode(err) != memory.CodeTooLarge {
		t.Fatalf("write larger than the whole budget: %v, want too_large", err)
	}
	w40, err := b.reserve(ctx, ref, 40)
	if err != nil {
		t.Fatalf("write that fits the bytes left: %v", err)
	}
	b.release(ref, w40, 40)
	if w, _ := b.usage(ctx, ref); w.used != 1 || w.bytes != 60 || w.limit.bytes != 100 || w.limit.writes != 100 {
		t.Fatalf("usage after a release = %d writes, %d bytes of %+v; want 1, 60 of {100 100}", w.used, w.bytes, w.limit)
	}
}
