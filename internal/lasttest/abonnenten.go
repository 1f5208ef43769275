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
	hc   *http.Client
	// readers are a read caller per project, for the feed.
	readers map[string]memory.Caller
	// cursors are the feed positions per project when the load started.
	cursors map[string]string
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
	ab := &abos{readers: map[string]memory.Caller{}, cursors: map[string]string{}}
	// A transport of their own: every subscriber holds a connection for its
	// stream and reuses one for its few requests.
	ab.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 8, IdleConnTimeout: 90 * time.Second}}
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
		ab.list = append(ab.list, &abonnent{id: i, url: srv.url, token: tok, hc: ab.hc,
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

// mark takes the feed position of every project: the load starts after it.
func (ab *abos) mark(t testing.TB, srv *server) {
	for p, c := range ab.readers {
		r, err := srv.app.Svc.Changes(context.Background(), c, service.ChangesRequest{Since: service.SinceNow})
		if err != nil {
			t.Fatalf("%s: Feed-Position: %v", p, err)
		}
		ab.cursors[p] = r.NextCursor
	}
}

// feed reads every change of each project since mark, in commit order:
// the order in which a subscriber hears them.
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

// settle waits until every subscriber heard as many updates as its project
// and entry had changes, or until the wait is over (a subscriber that lags
// by more than that counts what it missed).
func (ab *abos) settle(feed map[string][]service.Change, wait time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < wait {
		behind := false
		for _, s := range ab.list {
			p, e := s.counts()
			if p < len(feed[s.project]) || e < len(onSlug(feed[s.project], s.slug)) {
				behind = true
				break
			}
		}
		if !behind {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func onSlug(changes []service.Change, slug string) []service.Change {
	var out []service.Change
	for _, ch := range changes {
		if ch.Slug == slug {
			out = append(out, ch)
		}
	}
	return out
}
