package search

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// tinyWait makes every wait for the index give up at once: the gates below
// are held until the search returned, so no timing decides the outcome.
const tinyWait = time.Nanosecond

// TestSearchGivesUpOnSlowBuild: a search whose project index is still being
// built answers unavailable with a retry hint instead of waiting for it;
// once the build is done, the next search answers.
func TestSearchGivesUpOnSlowBuild(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	r := newTestRegistry(t, src, Options{IndexWait: tinyWait})
	started, release := blockScan(src, projA)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)

	_, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: "applesauce"})
	checkCatchingUp(t, err)
	<-started // the build goes on without the search that started it
	unblock()
	waitBuilt(t, r, projA)
	if got := slugs(find(t, r, projA, "applesauce")); len(got) != 1 {
		t.Fatalf("search after the build: %v, want [alpha]", got)
	}
}

// TestSearchGivesUpOnQueuedRefresh: a search that cannot wait for a write
// queued before it says unavailable; it never answers from the index that
// lacks the write (read-your-writes).
func TestSearchGivesUpOnQueuedRefresh(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "alpha", "Alpha", "applesauce")
	r := newTestRegistry(t, src, Options{IndexWait: tinyWait})
	_, _ = r.Search(testCtx(t), projA, memory.SearchQuery{Text: "applesauce"}) // starts the build
	waitBuilt(t, r, projA)

	started, release := blockLatest(src, "alpha")
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	src.Put(projA, "alpha", "Alpha", "bananabread")
	if err := r.Queue(projA, "alpha"); err != nil {
		t.Fatal(err)
	}
	<-started // the batch is reading alpha and held there
	for _, q := range []string{"applesauce", "bananabread"} {
		hits, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: q})
		if err == nil {
			t.Fatalf("search %q while a queued write is held answered %+v; want unavailable", q, hits)
		}
		checkCatchingUp(t, err)
	}
	unblock()
	refresh(t, r, projA, "alpha") // waits for the held batch and one after it
	if got := find(t, r, projA, "bananabread"); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("search after the refresh: %+v, want alpha version 2", got)
	}
}

// checkCatchingUp asserts the unavailable error of a search that gave up.
func checkCatchingUp(t *testing.T, err error) {
	t.Helper()
	var me *memory.Error
	if memory.ErrorCode(err) != memory.CodeUnavailable || !errors.As(err, &me) {
		t.Fatalf("search during a held build or refresh: %v, want unavailable", err)
	}
	if !strings.Contains(me.Message, "index is catching up, retry in ") || me.RetryAfter < time.Second ||
		me.RetryAfter%time.Second != 0 {
		t.Fatalf("unavailable error %q with Retry-After %s; want a retry hint of whole seconds, at least 1", me.Message, me.RetryAfter)
	}
}

// waitBuilt waits (bounded) until the project's index is built.
func waitBuilt(t *testing.T, r *Registry, ref memory.ProjectRef) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !r.Stats().Projects[ref].Built {
		if time.Now().After(deadline) {
			t.Fatal("index not built within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
