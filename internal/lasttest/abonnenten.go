//go:build last

// -last.abonnenten=N: N subscribed MCP sessions (abonnent.go) on the server
// while the mixed load runs, and the bounds for them: how long a
// write takes from its acknowledgement to each subscriber, that none is
// missed, what a subscription costs in memory, and what the subscribers
// cost the load's throughput (compareAbonnenten).

package lasttest

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// quittung is one acknowledged remember: the version it wrote and when the
// agent got the answer (UnixNano).
type quittung struct {
	project, slug string
	version       int
	at            int64
}

// quittiere notes the acknowledgement of a remember whose answer is sc. The
// moment is taken first, so that decoding does not count.
func (a *agent) quittiere(sc any) {
	at := time.Now().UnixNano()
	m, ok := sc.(map[string]any)
	if !ok {
		return
	}
	project, _ := m["project"].(string)
	slug, _ := m["slug"].(string)
	version, _ := m["version"].(float64)
	if version > 0 {
		a.acks = append(a.acks, quittung{project: project, slug: slug, version: int(version), at: at})
	}
}

// abos are the subscribers of one run.
type abos struct {
	list []*abonnent
	// readers are a read caller per project, for the feed.
	readers map[string]memory.Caller
	// cursors are the feed positions per project when the load started.
	cursors map[string]string
	// batches are per project what the test's own watcher heard during
	// the load, resyncs how often it was told to read again; stops end
	// its watches.
	mu      sync.Mutex
	batches map[string][]stapel
	resyncs map[string]int
	stops   []func()
	// per subscriber: memory (bytes) and goroutines of the session with its
	// GET stream, then of its two subscriptions.
	sessRSS, sessHeap, subRSS, subHeap, sessG, subG float64
	connWall                                        time.Duration
}

// abonnentProjekt is the project subscriber i works in: as agent i's.
func abonnentProjekt(a aufbau, i int) memory.ProjectRef { return a.projects[i%len(a.projects)] }

// connectAbos makes n read keys (subscriber i in project i mod N, the
// contested slug i mod -last.slugs), opens their sessions and GET streams,
// then subscribes them, and measures the memory each step adds.
func connectAbos(t testing.TB, srv *server, a aufbau, n int) *abos {
	ctx := context.Background()
	ab := &abos{readers: map[string]memory.Caller{}, cursors: map[string]string{}, batches: map[string][]stapel{}, resyncs: map[string]int{}}
	for pi, ref := range a.projects {
		c, err := srv.app.Svc.Authenticate(ctx, srv.checkers[pi])
		if err != nil {
			t.Fatal(err)
		}
		ab.readers[ref.String()] = c
	}
	for i := range n {
		ref := abonnentProjekt(a, i)
		tok, _, err := srv.app.Svc.CreateKey(ctx, ref, fmt.Sprintf("abonnent-%04d", i), memory.RoleRead)
		if err != nil {
			t.Fatal(err)
		}
		// Each its own transport, as each client is its own program: two
		// connections, the stream's and the one its requests reuse (a
		// shared pool would hand one subscriber's idle connection to
		// another's stream and open new ones while the subscriptions'
		// memory is measured).
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second}}
		ab.list = append(ab.list, &abonnent{id: i, url: srv.url, token: tok, hc: hc,
			project: ref.String(), slug: contestedSlug(i % *lastSlugs)})
	}
	// On a failure below, the streams opened so far end with the test.
	t.Cleanup(ab.close)
	rss0, heap0 := memoryNow()
	g0 := runtime.NumGoroutine()
	start := time.Now()
	all(t, ab.list, func(s *abonnent) error { return s.open(ctx) })
	rss1, heap1 := memoryNow()
	g1 := runtime.NumGoroutine()
	all(t, ab.list, func(s *abonnent) error { return s.subscribe(ctx) })
	ab.connWall = time.Since(start)
	rss2, heap2 := memoryNow()
	g2 := runtime.NumGoroutine()
	per := func(x, y uint64) float64 { return (float64(y) - float64(x)) / float64(n) }
	ab.sessRSS, ab.sessHeap, ab.sessG = per(rss0, rss1), per(heap0, heap1), float64(g1-g0)/float64(n)
	ab.subRSS, ab.subHeap, ab.subG = per(rss1, rss2), per(heap1, heap2), float64(g2-g1)/float64(n)
	return ab
}

// all runs f for every subscriber, 32 at a time, and fails the test with
// the first error.
func all(t testing.TB, list []*abonnent, f func(*abonnent) error) {
	var wg sync.WaitGroup
	work := make(chan *abonnent)
	errs := make(chan error, len(list))
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				if err := f(s); err != nil {
					errs <- fmt.Errorf("abonnent %d: %w", s.id, err)
				}
			}
		}()
	}
	for _, s := range list {
		work <- s
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if strings.Contains(err.Error(), "-32601") {
			t.Fatalf("%v (der Server kennt resources/subscribe nicht: Abonnements fehlen)", err)
		}
		t.Fatal(err)
	}
}

// stapel is one batch of a project's changes as the change hub hands it
// to every watcher of the project: each subscriber hears one update for
// the project URI per batch (and one for its entry URI per batch that
// changes its entry). at is when the test's own watcher got it.
type stapel struct {
	at      int64
	changes []service.Change
}

// mark takes the feed position of every project and starts the test's own
// watcher of each (service.Watch, the same hub the subscriptions hear): the
// load starts after it, and the batches it sees are the ones every
// subscriber of the project sees.
func (ab *abos) mark(t testing.TB, srv *server) {
	for p, c := range ab.readers {
		r, err := srv.app.Svc.Changes(context.Background(), c, service.ChangesRequest{Since: service.SinceNow})
		if err != nil {
			t.Fatalf("%s: Feed-Position: %v", p, err)
		}
		ab.cursors[p] = r.NextCursor
		ref, err := memory.ParseProject("project", p)
		if err != nil {
			t.Fatal(err)
		}
		stop, err := srv.app.Svc.Watch(c, ref, func(ev service.WatchEvent) {
			at := time.Now().UnixNano()
			ab.mu.Lock()
			defer ab.mu.Unlock()
			if ev.Resync {
				ab.resyncs[p]++
			}
			if len(ev.Changes) > 0 {
				ab.batches[p] = append(ab.batches[p], stapel{at: at, changes: ev.Changes})
			}
		})
		if err != nil {
			t.Fatalf("%s: Watch: %v", p, err)
		}
		ab.stops = append(ab.stops, stop)
	}
}

// feed reads every change of each project since mark, in commit order: a
// cross-check of the batches the watcher saw.
func (ab *abos) feed(t testing.TB, srv *server) map[string][]service.Change {
	out := map[string][]service.Change{}
	for p, c := range ab.readers {
		cursor := ab.cursors[p]
		for range 100_000 { // bounded: pages of MaxChangesLimit
			r, err := srv.app.Svc.Changes(context.Background(), c, service.ChangesRequest{Since: cursor, Limit: memory.MaxChangesLimit})
			if err != nil {
				t.Fatalf("%s: Feed lesen: %v", p, err)
			}
			for _, ch := range r.Changes {
				if ch.Version > 0 || ch.Kind == "forget" {
					out[p] = append(out[p], ch)
				}
			}
			cursor = r.NextCursor
			if len(r.Changes) == 0 {
				break
			}
		}
	}
	return out
}

// heardAll tells whether s heard of every batch of its project (and of its
// entry): the last one is covered (align).
func (ab *abos) heardAll(s *abonnent) bool {
	ab.mu.Lock()
	all := ab.batches[s.project]
	ab.mu.Unlock()
	mine := onSlug(all, s.slug)
	s.mu.Lock()
	defer s.mu.Unlock()
	covered := func(b []stapel, r []int64) bool {
		idx, _ := align(b, r)
		return len(idx) == 0 || idx[len(idx)-1] >= 0
	}
	return covered(all, s.projectAt) && covered(mine, s.entryAt)
}

// settle waits until the test's watcher heard of every change of the feed
// and every subscriber of every batch, or until wait is over (a
// subscriber that lags by more than that counts what it missed), then
// stops the test's watchers.
func (ab *abos) settle(feed map[string][]service.Change, wait time.Duration) time.Duration {
	start := time.Now()
	watched := func() bool {
		ab.mu.Lock()
		defer ab.mu.Unlock()
		for p, changes := range feed {
			n := 0
			for _, b := range ab.batches[p] {
				n += len(b.changes)
			}
			if n < len(changes) {
				return false
			}
		}
		return true
	}
	for time.Since(start) < wait {
		if watched() && !slices.ContainsFunc(ab.list, func(s *abonnent) bool { return !ab.heardAll(s) }) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, stop := range ab.stops {
		stop()
	}
	ab.stops = nil
	return time.Since(start)
}

// onSlug are the batches that change slug, each with only those changes.
func onSlug(batches []stapel, slug string) []stapel {
	var out []stapel
	for _, b := range batches {
		var mine []service.Change
		for _, ch := range b.changes {
			if ch.Slug == slug {
				mine = append(mine, ch)
			}
		}
		if len(mine) > 0 {
			out = append(out, stapel{at: b.at, changes: mine})
		}
	}
	return out
}

// skew is how much earlier than the test's watcher a subscriber may get
// the same batch: the hub calls its watchers one after the other, in no
// fixed order, and on two busy cores its goroutine may wait for a core
// between two of them. Only subscribers whose updates were collapsed are
// matched by time; a larger skew could only make their times shorter by
// up to skew, a smaller one would report a miss that was none.
const skew = 50 * time.Millisecond

// align maps batches to a subscriber's updates r (arrival times, in
// order): idx[b] is the update that told of batch b, -1 if none did. When
// there are as many updates as batches, each update is one batch (exact).
// Otherwise the subscriber's updates were collapsed (its channel was full:
// what it missed comes later as one update) or it got more (a resync
// marker): batch b is told by the first update, not before the one of
// batch b-1, that arrived no earlier than skew before the test's watcher
// got b — an update cannot tell of a batch not read yet.
func align(batches []stapel, r []int64) (idx []int, exact bool) {
	idx = make([]int, len(batches))
	if len(r) == len(batches) {
		for b := range idx {
			idx[b] = b
		}
		return idx, true
	}
	k := 0
	for b, st := range batches {
		for k < len(r) && r[k] < st.at-int64(skew) {
			k++
		}
		if k == len(r) {
			idx[b] = -1
			continue
		}
		idx[b] = k
	}
	return idx, false
}
