package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// subscriberOf is the registry's subscriber of a 2025 session.
func (h *subHarness) subscriberOf(t *testing.T, sid string) *subscriber {
	t.Helper()
	r := h.srv.subs
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subs[sessionKey(sid)]
	if s == nil {
		t.Fatalf("session %s has no subscriber", sid)
	}
	return s
}

// TestSubscribeStuckSubscriber: a subscriber that never reads (a 2025
// session that opens no stream: mcp-go's 100 slots fill) neither stops the
// writers nor another subscriber; what it misses is held as at most its
// subscribed URIs, however much is written; once it reads again it gets
// the resync marker — updated for each URI it holds, then list_changed.
func TestSubscribeStuckSubscriber(t *testing.T) {
	h := newSubHarness(t)
	const entry, project = "munin://ws/p/notes/x", "munin://ws/p"
	h.remember(t, h.w, "ws/p", "notes/x")
	stuck, good := h.session2025(t, h.tokA), h.session2025(t, h.tokB)
	for _, s := range []*rawSession{stuck, good} {
		s.ok(t, "resources/subscribe", map[string]any{"uri": entry}, nil)
		s.ok(t, "resources/subscribe", map[string]any{"uri": project}, nil)
	}
	gev := readEvents(h.stream(t, h.tokB, good.sid).Body)
	ss, gs := h.subscriberOf(t, stuck.sid), h.subscriberOf(t, good.sid)

	// Every write succeeds while the stuck one's channel is full. Each
	// write waits (bounded) until its batch was handed out, so that every
	// write is a batch of its own even where the hub reads by polling (the
	// suite across the cluster hop), and the stuck channel fills.
	writes := 0
	for ; ss.overflows.Load() == 0; writes++ {
		if writes == 500 {
			t.Fatalf("%d writes and the stuck subscriber never overflowed", writes)
		}
		before := h.srv.subs.sent.Load()
		h.remember(t, h.w, "ws/p", "notes/x")
		for i := 0; i < 2000 && h.srv.subs.sent.Load() == before && ss.overflows.Load() == 0; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	for range 200 { // and on, while it owes
		h.remember(t, h.w, "ws/p", "notes/x")
		writes++
	}
	h.srv.subs.mu.Lock()
	owed := len(ss.pend)
	h.srv.subs.mu.Unlock()
	if owed > 2 {
		t.Errorf("the stuck subscriber owes %d URIs after %d writes; want at most its 2", owed, writes)
	}
	t.Logf("%d writes; the stuck subscriber overflowed %d times and owes %d URIs", writes, ss.overflows.Load(), owed)

	// The good subscriber kept up: a new slug after the writes reaches it
	// as updated(project) and list_changed, and nothing of it ever overflowed.
	h.remember(t, h.w, "ws/p", "notes/end")
	for seen := 0; ; seen++ {
		if seen > 2*writes+4 {
			t.Fatal("the good subscriber never heard of notes/end")
		}
		if n := gev.next(t); n.Method == listChanged {
			break
		}
	}
	if n := gs.overflows.Load(); n != 0 {
		t.Errorf("the good subscriber overflowed %d times", n)
	}

	// The stuck one reads again: the buffered notifications, then the
	// marker (the sorted URIs, then list_changed).
	sev := readEvents(h.stream(t, h.tokA, stuck.sid).Body)
	var last []note
	for seen := 0; ; seen++ {
		if seen > 200 {
			t.Fatal("no resync marker after 200 events")
		}
		n := sev.next(t)
		last = append(last, n)
		if n.Method == listChanged && len(last) >= 3 {
			break
		}
	}
	tail := last[len(last)-3:]
	if tail[0].Method != updated || tail[0].Params.URI != project || tail[1].Method != updated || tail[1].Params.URI != entry {
		t.Fatalf("the marker ends %+v, want updated %s, updated %s, list_changed", tail, project, entry)
	}
	if h.srv.subs.resyncs.Load() == 0 {
		t.Error("no resync counted")
	}
}

// TestSubscribeRace: many goroutines subscribe, unsubscribe and drop
// subscribers while writes go on (run with -race); afterwards nothing is
// left: no subscriber, no watch.
func TestSubscribeRace(t *testing.T) {
	h := newSubHarness(t)
	r := h.srv.subs
	a := h.env.Caller(t, h.tokA)
	stop := make(chan struct{})
	var written atomic.Int64
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := range 600 { // under the project's write budget of 1,000 an hour
			select {
			case <-stop:
				return
			default:
			}
			if _, err := h.env.Svc.Remember(context.Background(), h.w, service.RememberRequest{Project: "ws/p", Slug: fmt.Sprintf("race/%d", i%7), Content: "x"}); err != nil {
				t.Errorf("remember: %v", err)
				return
			}
			written.Add(1)
		}
	})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			ch := make(chan mcp.JSONRPCNotification, 4) // never read: overflows too
			// Until the writer wrote 100 times (bounded by its own 600).
			for i := 0; i < 200 || (written.Load() < 100 && i < 100_000); i++ {
				key := fmt.Sprintf("race-%d-%d", g, i%3)
				uri := fmt.Sprintf("munin://ws/p/race/%d", (g+i)%7)
				if i%5 == 0 {
					uri = "munin://ws/p"
				}
				r.subscribe(key, func() *subscriber {
					return &subscriber{key: key, caller: a, ch: ch, listChanged: true, ready: true}
				}, uri)
				switch i % 4 {
				case 1:
					r.unsubscribe(key, uri, true)
				case 3:
					r.drop(key)
				}
				r.resync()
			}
			for i := range 3 {
				r.drop(fmt.Sprintf("race-%d-%d", g, i))
			}
		})
	}
	wg.Wait()
	close(stop)
	writer.Wait()
	h.registryEmpty(t)
}

// TestSubscriptionMemory measures what the registry and the watches hold
// for 1,000 subscribers of an entry and its project each (a session's or
// stream's own cost — mcp-go's 100-slot channel, the HTTP stream — comes on
// top and is measured by the load test) and checks the bound of
// 10 KB per subscription.
func TestSubscriptionMemory(t *testing.T) {
	h := newSubHarness(t)
	r := h.srv.subs
	const n = 1000
	callers := make([]memory.Caller, n)
	for i := range callers {
		_, callers[i] = h.env.Key(t, "ws", "p", fmt.Sprintf("reader-%d", i), memory.RoleRead)
	}
	before := heapNow()
	for i := range n {
		key := fmt.Sprintf("mem-%d", i)
		mk := func() *subscriber { return &subscriber{key: key, caller: callers[i], listChanged: true, ready: true} }
		r.subscribe(key, mk, fmt.Sprintf("munin://ws/p/notes/entry-%d", i))
		r.subscribe(key, mk, "munin://ws/p")
	}
	after := heapNow()
	if subs, uris := r.size(); subs != n || uris != 2*n || h.env.Svc.Watchers() != n {
		t.Fatalf("%d subscribers, %d URIs, %d watchers; want %d, %d, %d", subs, uris, h.env.Svc.Watchers(), n, 2*n, n)
	}
	per := float64(after-before) / n
	t.Logf("%d subscribers of 2 URIs each: %.0f bytes per subscriber, %.0f per subscription (registry and watch)", n, per, per/2)
	if per/2 > 10<<10 {
		t.Errorf("%.0f bytes per subscription; the bound is 10 KB", per/2)
	}
	for i := range n {
		r.drop(fmt.Sprintf("mem-%d", i))
	}
	h.registryEmpty(t)
}

// TestSubscribeWatchStartedAfterRemoval: a watch whose project was
// unsubscribed while service.Watch ran is stopped as soon as it started.
func TestSubscribeWatchStartedAfterRemoval(t *testing.T) {
	h := newSubHarness(t)
	r := h.srv.subs
	const uri = "munin://ws/p/notes/a"
	s := &subscriber{key: "late", caller: h.env.Caller(t, h.tokA), ready: true}
	r.mu.Lock()
	r.addLocked(s)
	s.uris[uri] = 1
	start := r.addURILocked(s, uri)
	stops := r.removeURILocked(s, uri) // the unsubscribe that overtook Watch
	r.mu.Unlock()
	if len(start) != 1 || len(stops) != 0 {
		t.Fatalf("start %v, stops %d; want one project to start and no stop yet", start, len(stops))
	}
	r.startWatches(s, start)
	if n := h.env.Svc.Watchers(); n != 0 {
		t.Errorf("%d watchers after the project was dropped; want 0", n)
	}
	r.drop("late")
	h.registryEmpty(t)
}

// TestSubscribeResyncMarker: a listen stream is not delivered to before
// the maintenance loop saw it twice (mcp-go acknowledges it after the hook
// that registered it, and nothing may come first); what happens meanwhile,
// and a WatchEvent.Resync, become the resync marker: updated for each URI
// it owes (a Resync: every one it holds in the project), then list_changed.
func TestSubscribeResyncMarker(t *testing.T) {
	h := newSubHarness(t)
	r := h.srv.subs
	r.every = time.Hour // the test runs the rounds itself
	ch := make(chan mcp.JSONRPCNotification, 10)
	const entry, project = "munin://ws/p/notes/a", "munin://ws/p"
	mk := func() *subscriber {
		return &subscriber{key: "l:test", caller: h.env.Caller(t, h.tokA), ch: ch, tag: "L", listChanged: true}
	}
	r.subscribe("l:test", mk, entry)
	r.subscribe("l:test", mk, project)
	h.remember(t, h.w, "ws/p", "notes/b") // not ready: owed
	waitFor(t, "the write owed", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.subs["l:test"].pendList
	})
	marker := func() []string {
		var got []string
		for len(ch) > 0 {
			n := <-ch
			u, _ := n.Params.AdditionalFields["uri"].(string)
			if n.Params.Meta[mcp.MetaKeySubscriptionID] != "L" {
				t.Errorf("%s %s not tagged: %v", n.Method, u, n.Params.Meta)
			}
			got = append(got, n.Method+" "+u)
		}
		return got
	}
	r.tick()
	if got := marker(); len(got) != 0 {
		t.Fatalf("sent before ready: %v", got)
	}
	r.tick()
	// What the write of notes/b owed: the project's update and list_changed.
	if got, want := marker(), []string{updated + " " + project, listChanged + " "}; !slices.Equal(got, want) {
		t.Fatalf("after two rounds: %v, want %v", got, want)
	}

	r.mu.Lock()
	s := r.subs["l:test"]
	ref := memory.ProjectRef{Workspace: "ws", Project: "p"}
	w := s.projects[ref]
	r.mu.Unlock()
	r.deliver(s, ref, w, service.WatchEvent{Resync: true})
	r.tick()
	// A Resync owes everything the subscriber holds in the project.
	want := []string{updated + " " + project, updated + " " + entry, listChanged + " "}
	if got := marker(); !slices.Equal(got, want) {
		t.Fatalf("after a Resync event: %v, want %v", got, want)
	}
	r.drop("l:test")
	h.registryEmpty(t)
}
