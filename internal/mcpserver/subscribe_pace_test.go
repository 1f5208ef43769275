package mcpserver

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestSubscribePace: a subscriber hears of the first write after a quiet
// spell at once; the writes within its pace gather into one
// notification per URI, sent when the pace has passed, and none of them
// is lost. The pace timer is driven by the test, so nothing depends on how
// fast the machine is.
func TestSubscribePace(t *testing.T) {
	h := newSubHarness(t)
	r := h.srv.subs
	// A hand-driven clock: the pace is 4 s of it (keys stay fresh: they go
	// stale after subscribeKeyStale), so nothing is due until the test
	// moves it on and wakes the pacer.
	var (
		mu    sync.Mutex
		clock = time.Now()
	)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	passPace := func() {
		mu.Lock()
		clock = clock.Add(4 * time.Second)
		mu.Unlock()
		r.mu.Lock()
		r.wakePacerLocked()
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.now, r.pace = now, 4*time.Second
	r.mu.Unlock()
	_, p2 := h.env.Key(t, "ws", "p2", "sentinel", memory.RoleWrite)
	const project = "munin://ws/p"
	h.remember(t, h.w, "ws/p", "notes/a")
	s := h.session2025(t, h.tokA)
	s.ok(t, "resources/subscribe", map[string]any{"uri": project}, nil)
	ev := readEvents(h.stream(t, h.tokA, s.sid).Body)
	sub := h.subscriberOf(t, s.sid)
	waitFor(t, "the subscriber is ready", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return sub.ready })

	// settled waits until every write so far was handed out: the hub reads
	// a workspace on one goroutine, so once a write of ws/p2 after them
	// reached a watcher, every batch of ws/p before it was delivered.
	settled := func() {
		t.Helper()
		seen := make(chan struct{}, 1)
		stop, err := h.env.Svc.Watch(p2, memory.ProjectRef{Workspace: "ws", Project: "p2"}, func(service.WatchEvent) {
			select {
			case seen <- struct{}{}:
			default:
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		h.remember(t, p2, "ws/p2", "sentinel")
		select {
		case <-seen:
		case <-timeout():
			t.Fatal("the sentinel write never reached its watcher")
		}
	}

	// sent counts a notification after it was handed over, so the client
	// may read it first: the test waits for the count, bounded.
	counted := func(n int64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d notifications counted", n), func() bool { return r.sent.Load() >= n })
	}
	h.remember(t, h.w, "ws/p", "notes/a") // after a quiet spell: at once
	ev.expect(t, updated, project)
	counted(1)
	const burst = 20
	for range burst {
		h.remember(t, h.w, "ws/p", "notes/a")
	}
	settled()
	r.mu.Lock()
	_, owed := sub.pend[project]
	paced := !sub.dueAt.IsZero()
	r.mu.Unlock()
	if !owed || !paced {
		t.Fatalf("after %d writes within the pace: owed %v, paced %v; want the project owed and a round due", burst, owed, paced)
	}
	if got := r.sent.Load(); got != 1 {
		t.Fatalf("%d notifications sent before the pace passed; want 1", got)
	}
	passPace()
	ev.expect(t, updated, project)
	waitFor(t, "the pacer stopped", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return !r.pacerRunning })
	counted(2)
	if got := r.sent.Load(); got != 2 {
		t.Errorf("%d notifications for %d writes; want 2 (the first, then one for the rest)", got, burst+1)
	}
	if c := h.srv.SubscriptionStats().Coalesced; c < 0 || c > burst-1 {
		t.Errorf("coalesced %d; want 0..%d", c, burst-1)
	}

	// Nothing else came: the next event is of a later write.
	h.remember(t, h.w, "ws/p", "notes/b")
	settled()
	passPace()
	ev.expect(t, updated, project)
	ev.expect(t, listChanged, "")
	if n := r.resyncs.Load(); n != 0 {
		t.Errorf("%d rounds came from the maintenance loop; want all from the pacer", n)
	}
}
