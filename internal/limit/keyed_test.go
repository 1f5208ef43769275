package limit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock for the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Unix(1_000_000, 0)} }

// TestAcquireIsAllOrNothing: a request refused by its project's limit
// leaves its key's count and tokens as they were.
func TestAcquireIsAllOrNothing(t *testing.T) {
	c := newClock()
	perKey := New[int](Rule{InFlight: 2, Rate: 1, Burst: 3}, c.now)
	perProject := New[string](Rule{InFlight: 1}, c.now)
	rel, ref := Acquire(perKey.Slot(1), perProject.Slot("p"))
	if ref != nil {
		t.Fatalf("first request refused: %+v", ref)
	}
	// Key 2 of the same project: its project is full.
	for range 5 {
		if _, ref := Acquire(perKey.Slot(2), perProject.Slot("p")); ref == nil || ref.Index != 1 || ref.Verdict != OverInFlight {
			t.Fatalf("second key of a full project: %+v, want refused by the project (index 1)", ref)
		}
	}
	if got := perKey.Busy(2); got != 0 {
		t.Fatalf("key 2 holds %d units after its refusals, want 0", got)
	}
	rel()
	rel() // twice changes nothing
	if got := perProject.Busy("p"); got != 0 {
		t.Fatalf("project holds %d after release, want 0", got)
	}
	// Key 2's five refusals gave their tokens back: its burst of 3 is whole.
	for i := range 3 {
		r, ref := Acquire(perKey.Slot(2))
		if ref != nil {
			t.Fatalf("token %d of key 2's burst refused: %+v (refusals by the project took its tokens)", i+1, ref)
		}
		r()
	}
	if _, ref := Acquire(perKey.Slot(2)); ref == nil || ref.Verdict != OverRate || ref.RetryAfter < time.Second {
		t.Fatalf("fourth request in the same instant: %+v, want over the rate with Retry-After ≥ 1 s", ref)
	}
	c.add(time.Second)
	if _, ref := Acquire(perKey.Slot(2)); ref != nil {
		t.Fatalf("after a second's refill: %+v", ref)
	}
}

// TestLimitsHoldUnderConcurrency: 64 goroutines hammer keys of two
// projects behind one global table; at no moment does a key, a project or
// the table hold more than its limit, and everything is given back.
func TestLimitsHoldUnderConcurrency(t *testing.T) {
	const keyMax, projectMax, globalMax = 3, 5, 8
	perKey := New[int](Rule{InFlight: keyMax}, nil)
	perProject := New[int](Rule{InFlight: projectMax}, nil)
	global := New[struct{}](Rule{InFlight: globalMax}, nil)
	var keyN [8]atomic.Int32
	var projectN [2]atomic.Int32
	var globalN atomic.Int32
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := g % 8
			project := key % 2
			for range 500 {
				rel, ref := Acquire(perKey.Slot(key), perProject.Slot(project), global.Slot(struct{}{}))
				if ref != nil {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				k, p, all := keyN[key].Add(1), projectN[project].Add(1), globalN.Add(1)
				if k > keyMax || p > projectMax || all > globalMax {
					t.Errorf("in flight: key %d, project %d, global %d; limits %d, %d, %d", k, p, all, keyMax, projectMax, globalMax)
				}
				keyN[key].Add(-1)
				projectN[project].Add(-1)
				globalN.Add(-1)
				rel()
			}
		}()
	}
	wg.Wait()
	if admitted.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("admitted %d, refused %d: the test did not press the limits", admitted.Load(), refused.Load())
	}
	for k := range 8 {
		if n := perKey.Busy(k); n != 0 {
			t.Errorf("key %d holds %d at the end", k, n)
		}
	}
	if n := global.Busy(struct{}{}); n != 0 {
		t.Errorf("global table holds %d at the end", n)
	}
}

// TestWaitQueuesWithinTheLimit: Wait lets InFlight units run at once, wakes
// a waiter when one ends, and gives up when its context does.
func TestWaitQueuesWithinTheLimit(t *testing.T) {
	l := New[string](Rule{InFlight: 2}, nil)
	ctx := context.Background()
	r1, _ := l.Wait(ctx, "p")
	r2, _ := l.Wait(ctx, "p")
	got := make(chan func(), 1)
	go func() {
		r3, err := l.Wait(ctx, "p")
		if err != nil {
			t.Error(err)
		}
		got <- r3
	}()
	select {
	case <-got:
		t.Fatal("a third unit ran while two were running")
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	var r3 func()
	select {
	case r3 = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken when a unit ended")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Wait(cctx, "p"); err == nil {
		t.Fatal("Wait with an ended context and a full key succeeded")
	}
	r2()
	r3()
	if n := l.Busy("p"); n != 0 {
		t.Fatalf("busy %d at the end", n)
	}
}

// TestMemoryFollowsKeysInUse: idle keys are swept; with MaxKeys a flood of
// new keys is refused instead of growing the map.
func TestMemoryFollowsKeysInUse(t *testing.T) {
	c := newClock()
	l := New[string](Rule{Rate: 10, Burst: 20, MaxKeys: 100}, c.now)
	for i := range 100 {
		rel, ref := Acquire(l.Slot(fmt.Sprint(i)))
		if ref != nil {
			t.Fatalf("key %d refused: %+v", i, ref)
		}
		rel()
	}
	if _, ref := Acquire(l.Slot("one more")); ref == nil || ref.Verdict != OverKeys {
		t.Fatalf("key 101 with 100 in use: %+v, want OverKeys", ref)
	}
	c.add(2 * minIdle)
	if _, ref := Acquire(l.Slot("later")); ref != nil {
		t.Fatalf("a new key after the others went idle: %+v", ref)
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("%d keys with state after the sweep, want 1", n)
	}
}

// TestNilKeyedAdmitsEverything: a rule that limits nothing costs nothing.
func TestNilKeyedAdmitsEverything(t *testing.T) {
	l := New[int](Rule{}, nil)
	if l != nil {
		t.Fatal("New with an empty rule is not nil")
	}
	rel, ref := Acquire(l.Slot(1), l.RateSlot(2))
	if ref != nil {
		t.Fatalf("refused: %+v", ref)
	}
	rel()
	r, err := l.Wait(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r()
}
