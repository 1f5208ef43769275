package search

// Recalls over several projects while their indexes are refreshed, built
// or slow: waiting, giving up, concurrency.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestSearchProjectsWaitsForQueuedRefreshInEveryProject: a write queued in one of
// the projects before the recall is found by it (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes).
func TestSearchProjectsWaitsForQueuedRefreshInEveryProject(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	src.Put(projB, "beta", "Beta", "applesauce")
	r := newTestRegistry(t, src, Options{})
	both := []memory.ProjectRef{projA, projB}
	searchAll(t, r, both, memory.SearchQuery{Text: "applesauce"}) // builds both

	unblock := holdBetaRewrite(t, r, src) // B's batch is reading beta and held there

	type result struct {
		hits []memory.Hit
		err  error
	}
	searched := make(chan result, 1)
	go func() {
		hits, err := r.SearchProjects(testCtx(t), both, memory.SearchQuery{Text: "bananabread"})
		searched <- result{hits, err}
	}()
	select {
	case res := <-searched:
		t.Fatalf("search returned before B's queued refresh was applied: %+v", res)
	case <-time.After(100 * time.Millisecond):
	}
	unblock()
	res := <-searched
	if res.err != nil || len(res.hits) != 1 || res.hits[0].Project != projB || res.hits[0].Version != 2 {
		t.Fatalf("search after B's queued write: %v, %v; want beta version 2 of %s", describe(res.hits), res.err, projB)
	}
}

// TestSearchProjectsGivesUpOnQueuedRefresh: past Options.IndexWait, a recall
// over several projects answers unavailable, never from an index that lacks
// a write queued before it.
func TestSearchProjectsGivesUpOnQueuedRefresh(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	src.Put(projB, "beta", "Beta", "applesauce")
	r := newTestRegistry(t, src, Options{IndexWait: tinyWait})
	both := []memory.ProjectRef{projA, projB}
	_, _ = r.SearchProjects(testCtx(t), both, memory.SearchQuery{Text: "applesauce"}) // starts the builds
	waitBuilt(t, r, projA)
	waitBuilt(t, r, projB)

	unblock := holdBetaRewrite(t, r, src)
	hits, err := r.SearchProjects(testCtx(t), both, memory.SearchQuery{Text: "bananabread applesauce"})
	if err == nil {
		t.Fatalf("search while B's queued write is held answered %v; want unavailable", describe(hits))
	}
	checkCatchingUp(t, err)
	unblock()
	refresh(t, r, projB, "beta")
	if got := searchAll(t, r, both, memory.SearchQuery{Text: "bananabread"}); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("search after the refresh: %v, want beta version 2", describe(got))
	}
}

func TestSearchProjectsRefusesBadInput(t *testing.T) {
	r := newTestRegistry(t, newFakeSource(), Options{})
	many := make([]memory.ProjectRef, MaxSearchProjects+1)
	for i := range many {
		many[i] = memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%d", i)}
	}
	for _, c := range []struct {
		name string
		refs []memory.ProjectRef
		q    memory.SearchQuery
		want string
	}{
		{"no project", nil, memory.SearchQuery{Text: "x"}, "no project"},
		{"too many", many, memory.SearchQuery{Text: "x"}, "at most 16 projects"},
		{"repeated", []memory.ProjectRef{projA, projB, projA}, memory.SearchQuery{Text: "x"}, "ws/alpha is listed twice"},
		{"empty text", []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "  "}, "query must not be empty"},
		{"bad tag", []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "x", Tags: []string{""}}, "tag"},
	} {
		_, err := r.SearchProjects(testCtx(t), c.refs, c.q)
		if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid naming %q", c.name, err, c.want)
		}
	}
	if st := r.Stats(); len(st.Projects) != 0 {
		t.Errorf("refused searches touched projects: %v", st.Projects)
	}
}

// TestSearchProjectsConcurrent: many recalls over overlapping projects, in
// different orders, while writers queue into all of them and failed batches
// drop indexes (swaps): every recall finds the write its goroutine queued
// before it, and none deadlocks (testCtx bounds each). A recall whose
// reads (of its hits, or of the changes its reopened index catches up with)
// met an injected failure is repeated, and skipped if they keep failing: it
// reported the failure, never a stale answer.
func TestSearchProjectsConcurrent(t *testing.T) {
	src := newFakeSource()
	refs := make([]memory.ProjectRef, 5)
	for i := range refs {
		refs[i] = memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%d", i)}
		src.Put(refs[i], "seed", "Seed", "seed words")
	}
	// Every 13th read fails, which drops the project's index: the next
	// search rebuilds it, swapping indexes under concurrent recalls.
	errInjected := errors.New("injected read failure")
	var mu sync.Mutex
	reads := 0
	src.SetHooks(nil, func(_ memory.ProjectRef, _ string, v memory.Version, err error) (memory.Version, error) {
		mu.Lock()
		reads++
		fail := reads%13 == 0
		mu.Unlock()
		if fail {
			return memory.Version{}, errInjected
		}
		return v, err
	})
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler)})
	var wg sync.WaitGroup
	var answered atomic.Int64
	for g := range 12 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range 20 {
				ref := refs[rng.IntN(len(refs))]
				w := word(g*1000 + i)
				slug := fmt.Sprintf("g%d-%d", g, i%4)
				src.Put(ref, slug, "T", w)
				if err := r.Queue(ref, slug); err != nil {
					t.Error(err)
					return
				}
				// Search the project written and some others, in any order.
				set := []memory.ProjectRef{ref}
				for _, i := range rng.Perm(len(refs))[:1+rng.IntN(len(refs)-1)] {
					if refs[i] != ref {
						set = append(set, refs[i])
					}
				}
				rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
				hits, err := r.SearchProjects(testCtx(t), set, memory.SearchQuery{Text: w})
				for try := 0; try < 5 && errors.Is(err, errInjected); try++ {
					hits, err = r.SearchProjects(testCtx(t), set, memory.SearchQuery{Text: w})
				}
				if errors.Is(err, errInjected) {
					continue
				}
				if err != nil {
					t.Errorf("search %s in %v: %v", w, set, err)
					return
				}
				answered.Add(1)
				if len(hits) != 1 || hits[0].Project != ref || hits[0].Slug != slug {
					t.Errorf("search %s in %v: %v, want %s of %s", w, set, describe(hits), slug, ref)
					return
				}
			}
		})
	}
	wg.Wait()
	if answered.Load() == 0 {
		t.Fatal("no recall was answered")
	}
	// However many recalls met a failure, once reads work again every
	// project's index holds exactly the latest text of every slug.
	src.SetHooks(nil, nil)
	for _, ref := range refs {
		for _, slug := range src.Slugs(ref) {
			latest, _ := src.Latest(context.Background(), ref, slug)
			hits := searchAll(t, r, []memory.ProjectRef{ref}, memory.SearchQuery{Text: latest.Content})
			if slug != "seed" && (len(hits) != 1 || hits[0].Slug != slug || hits[0].Version != latest.Version) {
				t.Errorf("%s %s: %v, want version %d", ref, slug, describe(hits), latest.Version)
			}
		}
	}
}

// TestSearchProjectsSlowBuildHoldsNoOtherIndex: while a recall over A and B waits
// for B's build, it holds nothing of A: A's refreshes, the drop of its index
// after a failed batch and its rebuild all go on (invariant 4,
// docs/architecture.md#invariant-4-projects-do-not-block-each-other).
func TestSearchProjectsSlowBuildHoldsNoOtherIndex(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	src.Put(projB, "beta", "Beta", "applesauce")
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler)})
	find(t, r, projA, "applesauce") // A is built, B is not

	scanStarted, releaseScan := make(chan struct{}), make(chan struct{})
	var scanOnce, releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(releaseScan) }) }
	t.Cleanup(unblock)
	injected := fmt.Errorf("injected read failure")
	src.SetHooks(func(ctx context.Context, ref memory.ProjectRef) error {
		if ref != projB {
			return nil
		}
		scanOnce.Do(func() { close(scanStarted) })
		select {
		case <-releaseScan:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, func(ref memory.ProjectRef, slug string, v memory.Version, err error) (memory.Version, error) {
		if slug == "alpha" && v.Version == 2 {
			return memory.Version{}, injected
		}
		return v, err
	})

	type result struct {
		hits []memory.Hit
		err  error
	}
	searched := make(chan result, 1)
	go func() {
		hits, err := r.SearchProjects(testCtx(t), []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "applesauce"})
		searched <- result{hits, err}
	}()
	<-scanStarted // B's build is held; the recall waits for it

	// A batch of A fails: A's index is dropped, which needs every search
	// holding it to let go. A recall holding A while it waits for B would
	// block this until B's build is done.
	src.Put(projA, "alpha", "Alpha", "bananabread")
	if err := r.Refresh(testCtx(t), projA, "alpha"); !errors.Is(err, injected) {
		t.Fatalf("failing refresh of A while B builds: %v, want the injected failure", err)
	}
	src.Put(projA, "alpha", "Alpha", "cherrypie") // version 3 reads fine
	refresh(t, r, projA, "alpha")
	if got := find(t, r, projA, "cherrypie"); len(got) != 1 || got[0].Version != 3 {
		t.Fatalf("A after its rebuild: %v, want alpha version 3", describe(got))
	}
	select {
	case res := <-searched:
		t.Fatalf("recall over A and B returned before B's build: %+v", res)
	default:
	}
	unblock()
	res := <-searched
	if res.err != nil || len(res.hits) != 1 || res.hits[0].Project != projB {
		t.Fatalf("recall after B's build: %v, %v; want beta of %s (A's alpha no longer says applesauce)", describe(res.hits), res.err, projB)
	}
}

// holdBetaRewrite writes beta of projB again ("bananabread") and queues its
// refresh, whose batch is then held while it reads beta; the returned
// unblock lets it go on (the test's cleanup does too).
func holdBetaRewrite(t *testing.T, r *Registry, src *fakeSource) (unblock func()) {
	started, release := blockLatest(src, "beta")
	var once sync.Once
	unblock = func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	src.Put(projB, "beta", "Beta", "bananabread")
	if err := r.Queue(projB, "beta"); err != nil {
		t.Fatal(err)
	}
	<-started
	return unblock
}
