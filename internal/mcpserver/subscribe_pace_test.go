package mcpserver

import (
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
	var (
		mu    sync.Mutex
		fires []func()
	)
	r.mu.Lock()
	r.afterFunc = func(_ time.Duration, f func()) *time.Timer {
		mu.Lock()
		defer mu.Unlock()
		fires = append(fires, f)
		return time.NewTimer(time.Hour) // stopped by drop; never fires first
	}
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

	h.remember(t, h.w, "ws/p", "notes/a") // after a quiet spell: at once
	ev.expect(t, updated, project)
	const burst = 20
	for range burst {
		h.remember(t, h.w, "ws/p", "notes/a")
	}
	settled()
	r.mu.Lock()
	_, owed := sub.pend[project]
	paced := sub.paced != nil
	r.mu.Unlock()
	mu.Lock()
	armed := len(fires)
	mu.Unlock()
	if !owed || !paced || armed != 1 {
		t.Fatalf("after %d writes within the pace: owed %v, timer %v, %d timers armed; want the project owed and one timer", burst, owed, paced, armed)
	}
	if got := r.sent.Load(); got != 1 {
		t.Fatalf("%d notifications sent before the pace passed; want 1", got)
	}
	mu.Lock()
	fire := fires[0]
	mu.Unlock()
	fire() // the pace has passed
	ev.expect(t, updated, project)
	if got := r.sent.Load(); got != 2 {
		t.Errorf("%d notifications for %d writes; want 2 (the first, then one for the rest)", got, burst+1)
	}
	if c := h.srv.SubscriptionStats().Coalesced; c < 0 || c > burst-1 {
		t.Errorf("coalesced %d; want 0..%d", c, burst-1)
	}

	// Nothing else came: the next event is of a later write.
	h.remember(t, h.w, "ws/p", "notes/b")
	settled()
	mu.Lock()
	fire = fires[len(fires)-1]
	mu.Unlock()
	fire()
	ev.expect(t, updated, project)
	ev.expect(t, listChanged, "")
}
