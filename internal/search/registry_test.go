package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/memory"
)

// blockScan makes ScanLatest of ref signal started and wait for release.
func blockScan(src *fakeSource, ref memory.ProjectRef) (started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	src.SetHooks(func(ctx context.Context, r memory.ProjectRef) error {
		if r != ref {
			return nil
		}
		once.Do(func() { close(started) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, nil)
	return started, release
}

func TestSlowBuildDoesNotBlockOtherProjects(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "a1", "Alpha", "slow project content")
	src.Put(projB, "b1", "Beta", "fast project content")
	r := newTestRegistry(t, src, Options{})
	started, release := blockScan(src, projA)

	aDone := make(chan []memory.Hit)
	go func() {
		hits, _ := r.Search(context.Background(), projA, memory.SearchQuery{Text: "slow"})
		aDone <- hits
	}()
	<-started

	// A's build is stuck in its scan; B must work regardless.
	src.Put(projB, "b2", "Gamma", "freshly written words")
	refresh(t, r, projB, "b2")
	if got := slugs(find(t, r, projB, "freshly")); len(got) != 1 || got[0] != "b2" {
		t.Fatalf("B search during A's build = %v, want [b2]", got)
	}
	select {
	case <-aDone:
		t.Fatal("A's search returned before its build was released")
	default:
	}

	close(release)
	if got := slugs(<-aDone); len(got) != 1 || got[0] != "a1" {
		t.Fatalf("A search after build = %v, want [a1]", got)
	}
}

func TestChangeDuringBuildIsNotLost(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "oldword content")
	src.Put(projA, "gone", "Gone", "vanishing content")
	r := newTestRegistry(t, src, Options{})
	started, release := blockScan(src, projA)

	searchDone := make(chan error)
	go func() {
		_, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "anything"})
		searchDone <- err
	}()
	<-started

	// The scan has its snapshot; these writes happen after it.
	src.Put(projA, "alpha", "Alpha", "newword content")
	src.Put(projA, "beta", "Beta", "betaword content")
	src.Forget(projA, "gone")
	errs := make(chan error, 3)
	for _, slug := range []string{"alpha", "beta", "gone"} {
		go func() { errs <- r.Refresh(context.Background(), projA, slug) }()
	}
	waitQueued(t, r, projA, 3) // all three wait for the build
	close(release)
	if err := <-searchDone; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"newword", []string{"alpha"}},
		{"oldword", nil},
		{"betaword", []string{"beta"}},
		{"vanishing", nil},
	} {
		if got := slugs(find(t, r, projA, c.query)); fmt.Sprint(got) != fmt.Sprint(c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("search %q = %v, want %v", c.query, got, c.want)
		}
	}
	if b := r.Stats().Builds; b != 1 {
		t.Errorf("builds = %d, want 1", b)
	}
}

// blockLatest makes the next read of slug by a refresh batch (it is marked
// changed) keep the value it read, signal started and wait for release
// before returning it: a slow read of an old state.
func blockLatest(src *fakeSource, slug string) (started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	src.SetHooks(nil, func(_ memory.ProjectRef, s string, v memory.Version, err error) (memory.Version, error) {
		first := false
		if s == slug {
			once.Do(func() { first = true })
		}
		if first {
			close(started)
			<-release
		}
		return v, err
	})
	src.Touch(slug)
	return started, release
}

func TestRefreshesInReversedOrderKeepLatest(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	r := newTestRegistry(t, src, Options{})
	find(t, r, projA, "applesauce") // build

	started, release := blockLatest(src, "alpha")
	first := make(chan error)
	go func() { first <- r.Refresh(context.Background(), projA, "alpha") }()
	<-started // the first refresh has read v1 and is slow to apply it

	src.Put(projA, "alpha", "Alpha", "bananabread")
	second := make(chan error)
	go func() { second <- r.Refresh(context.Background(), projA, "alpha") }()
	waitQueued(t, r, projA, 1)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}

	if got := find(t, r, projA, "bananabread"); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("v2 word: %+v, want alpha version 2", got)
	}
	if got := find(t, r, projA, "applesauce"); len(got) != 0 {
		t.Fatalf("v1 word still found: %+v", got)
	}
}

func TestStaleReadNeverGoesBack(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	src.Put(projA, "alpha", "Alpha", "bananabread")
	r := newTestRegistry(t, src, Options{})
	find(t, r, projA, "x") // build: v2 indexed

	// A lagging read hands back v1 although v2 is applied.
	v1 := src.Version(projA, "alpha", 1)
	src.SetHooks(nil, func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error) {
		return v1, nil
	})
	src.Touch("alpha")
	refresh(t, r, projA, "alpha")
	if got := find(t, r, projA, "applesauce"); len(got) != 0 {
		t.Fatalf("stale v1 came back: %+v", got)
	}
	if got := find(t, r, projA, "bananabread"); len(got) != 1 {
		t.Fatalf("v2 lost: %+v", got)
	}
}

func TestForgottenEntryNeverComesBack(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "secretword")
	r := newTestRegistry(t, src, Options{})
	if got := find(t, r, projA, "secretword"); len(got) != 1 {
		t.Fatalf("before forget: %v", got)
	}

	// A refresh read the live v1 just before the forget and is slow.
	started, release := blockLatest(src, "alpha")
	stale := make(chan error)
	go func() { stale <- r.Refresh(context.Background(), projA, "alpha") }()
	<-started
	src.Forget(projA, "alpha")
	forgot := make(chan error)
	go func() { forgot <- r.Refresh(context.Background(), projA, "alpha") }()
	waitQueued(t, r, projA, 1)
	close(release)
	for _, ch := range []chan error{stale, forgot} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got := find(t, r, projA, "secretword"); len(got) != 0 {
		t.Fatalf("forgotten entry found: %+v", got)
	}

	// Even a later read returning the old live version does not revive it.
	v1 := src.Version(projA, "alpha", 1)
	src.SetHooks(nil, func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error) {
		return v1, nil
	})
	src.Touch("alpha")
	refresh(t, r, projA, "alpha")
	if got := find(t, r, projA, "secretword"); len(got) != 0 {
		t.Fatalf("forgotten entry revived by stale read: %+v", got)
	}
}

func TestRefreshOfUnknownSlugRemovesNothingElse(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "keepme")
	r := newTestRegistry(t, src, Options{})
	refresh(t, r, projA, "never-written")
	if got := find(t, r, projA, "keepme"); len(got) != 1 {
		t.Fatalf("got %v", got)
	}
}

func TestConcurrentRefreshesCoalesce(t *testing.T) {
	const n = 100
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	src.Put(projA, "first", "First", "firstword")
	find(t, r, projA, "x") // build

	// Hold the first batch in its read until the others are queued behind it.
	started, release := blockLatest(src, "first")
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	wg.Go(func() { errs <- r.Refresh(context.Background(), projA, "first") })
	<-started
	for i := range n {
		slug := fmt.Sprintf("e%03d", i)
		src.Put(projA, slug, "Entry", word(i))
		wg.Go(func() { errs <- r.Refresh(context.Background(), projA, slug) })
	}
	waitQueued(t, r, projA, n)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if st.Refreshes != n+1 || st.Batches != 2 {
		t.Fatalf("refreshes %d in %d batches, want %d in 2", st.Refreshes, st.Batches, n+1)
	}
	for i := range n {
		if got := find(t, r, projA, word(i)); len(got) != 1 {
			t.Fatalf("%s: %v", word(i), got)
		}
	}
}

func TestConcurrentWritersReadTheirWrites(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				n := g*25 + i
				// Several writers share slugs, so versions race too.
				slug := fmt.Sprintf("s%d", n%40)
				src.Put(projA, slug, "T", word(n))
				// Queue, as the service does: it does not wait; the search does.
				if err := r.Queue(projA, slug); err != nil {
					t.Error(err)
					return
				}
				hits, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: word(n)})
				if err != nil {
					t.Error(err)
					return
				}
				// Another writer may already have replaced the slug, but
				// then a newer version than ours is indexed.
				if len(hits) == 0 {
					latest, _ := src.Latest(context.Background(), projA, slug)
					if latest.Content == word(n) {
						t.Errorf("write %s not found after refresh", word(n))
					}
				}
			}
		})
	}
	wg.Wait()
	// At rest the index holds exactly the latest version of every slug.
	for i := range 40 {
		slug := fmt.Sprintf("s%d", i)
		latest, _ := src.Latest(context.Background(), projA, slug)
		hits := find(t, r, projA, latest.Content)
		if len(hits) != 1 || hits[0].Slug != slug || hits[0].Version != latest.Version {
			t.Errorf("%s: hits %+v, want version %d", slug, hits, latest.Version)
		}
	}
}

// segments reports the in-memory segments of a project's index.
func segments(t testing.TB, r *Registry, ref memory.ProjectRef) int {
	p, _ := r.project(ref)
	adv, err := p.Current().Advanced()
	if err != nil {
		t.Fatal(err)
	}
	return int(adv.(*scorch.Scorch).StatsMap()["num_root_memorysegments"].(uint64))
}

func TestManySmallRefreshesKeepTheLatest(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{})
	find(t, r, projA, "x") // empty build
	for i := range 200 {
		slug := fmt.Sprintf("e%d", i%150)
		src.Put(projA, slug, "Entry", word(i))
		refresh(t, r, projA, slug)
	}
	for i := 50; i < 200; i++ {
		if got := find(t, r, projA, word(i)); len(got) != 1 {
			t.Fatalf("%s after 200 refreshes: %v", word(i), got)
		}
	}
	for i := range 50 { // replaced by i+150
		if got := find(t, r, projA, word(i)); len(got) != 0 {
			t.Fatalf("replaced %s still found", word(i))
		}
	}
}

func TestFailedBuildIsRetried(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "retryword")
	r := newTestRegistry(t, src, Options{})
	boom := errors.New("disk on fire")
	src.SetHooks(func(context.Context, memory.ProjectRef) error { return boom }, nil)
	if _, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: "retryword"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the scan's error", err)
	}
	src.SetHooks(nil, nil)
	if got := find(t, r, projA, "retryword"); len(got) != 1 {
		t.Fatalf("after retry: %v", got)
	}
}

func TestCloseCancelsBuildAndRefusesWork(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "word")
	r := NewRegistry(src, Options{})
	started, _ := blockScan(src, projA)
	done := make(chan error)
	go func() {
		_, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "word"})
		done <- err
	}()
	<-started
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("search during a cancelled build succeeded")
	}
	if _, err := r.Search(testCtx(t), projB, memory.SearchQuery{Text: "word"}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("search after close: %v", err)
	}
	if err := r.Refresh(testCtx(t), projB, "x"); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("refresh after close: %v", err)
	}
}

func TestSearchWaitsForQueuedRefresh(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	r := newTestRegistry(t, src, Options{})
	find(t, r, projA, "applesauce") // build

	started, release := blockLatest(src, "alpha")
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the registry's Close, which waits for the batch
	src.Put(projA, "alpha", "Alpha", "bananabread")
	if err := r.Queue(projA, "alpha"); err != nil {
		t.Fatal(err)
	}
	<-started // the batch is reading; Queue did not wait for it

	type result struct {
		hits []memory.Hit
		err  error
	}
	searched := make(chan result, 1)
	go func() {
		hits, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: "bananabread"})
		searched <- result{hits, err}
	}()
	select {
	case res := <-searched:
		t.Fatalf("search returned before the queued refresh was applied: %+v", res)
	case <-time.After(100 * time.Millisecond):
	}
	unblock()
	res := <-searched
	if res.err != nil || len(res.hits) != 1 || res.hits[0].Version != 2 {
		t.Fatalf("search after the queued write: %+v, %v; want alpha version 2", res.hits, res.err)
	}
}

func TestFailedBatchLeavesNoStaleIndex(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler)})
	find(t, r, projA, "applesauce") // build

	src.Put(projA, "alpha", "Alpha", "bananabread")
	src.SetHooks(nil, func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error) {
		return memory.Version{}, errors.New("disk I/O error")
	})
	if err := r.Refresh(testCtx(t), projA, "alpha"); err == nil {
		t.Fatal("refresh with a failing read reported success")
	}
	src.SetHooks(nil, nil)
	// The batch that failed must not leave the old text searchable: the
	// index is rebuilt from the source instead.
	if got := find(t, r, projA, "bananabread"); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("after a failed batch: %+v, want alpha version 2", got)
	}
	if got := find(t, r, projA, "applesauce"); len(got) != 0 {
		t.Fatalf("stale v1 still found: %+v", got)
	}
}
