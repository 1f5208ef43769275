package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Now()} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// burstOf runs n acquire calls of key at once, each released at once, and
// returns how many were admitted and the refusals.
func burstOf(l *recallLimiter, key memory.Key, n int) (int, []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok, refused := 0, []error{}
	for range n {
		wg.Go(func() {
			release, err := l.acquire(context.Background(), key)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
				return
			}
			ok++
			release()
		})
	}
	wg.Wait()
	return ok, refused
}

// TestRecallRateLimitPerKey: with the clock standing still, a key gets
// exactly its burst of recalls however many goroutines ask at once, the rest
// are budget_exhausted with the rate and the wait; another key has a bucket
// of its own; a second later the rate's worth is admitted again.
func TestRecallRateLimitPerKey(t *testing.T) {
	clock := newTestClock()
	l := newRecallLimiter(recallRules{rate: 10, burst: 50, concurrent: 0}, clock.Now)
	a := memory.Key{ID: 1, Agent: "alice"}
	b := memory.Key{ID: 2, Agent: "bob"}

	var wg sync.WaitGroup
	var okA, okB int
	var refusedA, refusedB []error
	wg.Go(func() { okA, refusedA = burstOf(l, a, 200) })
	wg.Go(func() { okB, refusedB = burstOf(l, b, 200) })
	wg.Wait()
	if okA != 50 || okB != 50 {
		t.Fatalf("admitted %d recalls of a and %d of b, want the burst of 50 each", okA, okB)
	}
	for _, err := range append(refusedA, refusedB...) {
		var me *memory.Error
		if !errors.As(err, &me) || me.Code != memory.CodeBudgetExhausted || me.RetryAfter != time.Second {
			t.Fatalf("refusal %v (retry after %v), want budget_exhausted with a retry after 1 s", err, me.RetryAfter)
		}
	}
	if msg := refusedA[0].Error(); msg != "budget_exhausted: key 1 (alice) may recall 10 times per second; retry in 1 s" {
		t.Fatalf("refusal reads %q", msg)
	}

	clock.advance(time.Second)
	if ok, _ := burstOf(l, a, 30); ok != 10 {
		t.Fatalf("a second later %d recalls admitted, want 10", ok)
	}
}

// TestRecallRateRetryAfter: the wait named is the time to the next token,
// rounded up to whole seconds.
func TestRecallRateRetryAfter(t *testing.T) {
	clock := newTestClock()
	l := newRecallLimiter(recallRules{rate: 0.1, burst: 1, concurrent: 0}, clock.Now)
	a := memory.Key{ID: 7, Agent: "slow"}
	if _, err := l.acquire(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	clock.advance(2500 * time.Millisecond)
	_, err := l.acquire(context.Background(), a)
	var me *memory.Error
	if !errors.As(err, &me) || me.RetryAfter != 8*time.Second ||
		me.Error() != "budget_exhausted: key 7 (slow) may recall 0.1 times per second; retry in 8 s" {
		t.Fatalf("got %v (retry after %v), want a wait of 8 s", err, me)
	}
}

// TestRecallConcurrencyCap: a key runs at most its cap of recalls at once;
// the next is refused at once (not queued) while another key is unaffected,
// and a finished recall frees its place.
func TestRecallConcurrencyCap(t *testing.T) {
	l := newRecallLimiter(recallRules{rate: 0, burst: 0, concurrent: 4}, time.Now)
	a := memory.Key{ID: 1, Agent: "alice"}
	b := memory.Key{ID: 2, Agent: "bob"}
	var held []func()
	for range 4 {
		release, err := l.acquire(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	_, err := l.acquire(context.Background(), a)
	var me *memory.Error
	if !errors.As(err, &me) || me.Code != memory.CodeBudgetExhausted || me.RetryAfter != time.Second ||
		me.Message != "key 1 (alice) may run 4 recalls at once; retry in 1 s" {
		t.Fatalf("5th recall at once: %v, want budget_exhausted naming the cap", err)
	}
	for range 4 {
		if _, err := l.acquire(context.Background(), b); err != nil {
			t.Fatalf("other key: %v", err)
		}
	}
	held[0]()
	held[0]() // a second release changes nothing
	if _, err := l.acquire(context.Background(), a); err != nil {
		t.Fatalf("after one finished: %v", err)
	}
	if _, err := l.acquire(context.Background(), a); err == nil {
		t.Fatal("a double release freed two places")
	}
}

// TestRecallLimiterForgetsIdleKeys: the state of keys that stopped
// recalling is dropped, so memory follows the keys in use; a key still
// running a recall keeps its state.
func TestRecallLimiterForgetsIdleKeys(t *testing.T) {
	clock := newTestClock()
	l := newRecallLimiter(recallRules{rate: 10, burst: 50, concurrent: 4}, clock.Now)
	for id := range int64(100) {
		release, err := l.acquire(context.Background(), memory.Key{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if id != 0 {
			release()
		}
	}
	if n := l.size(); n != 100 {
		t.Fatalf("holds %d keys, want 100", n)
	}
	clock.advance(2 * time.Minute)
	if _, err := l.acquire(context.Background(), memory.Key{ID: 1000}); err != nil {
		t.Fatal(err)
	}
	if n := l.size(); n != 2 {
		t.Fatalf("after the idle time holds %d keys, want 2 (the running one and the new one)", n)
	}
}
