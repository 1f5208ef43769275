package search

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// eventually waits, within ten seconds, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

func TestIdleIndexIsClosedAndReopened(t *testing.T) {
	src := newFakeSource()
	fillWords(src, projA, 20)
	r := newTestRegistry(t, src, Options{IdleClose: 20 * time.Millisecond, PersistNap: time.Millisecond})
	want(t, r, projA, word(1), "e001")
	eventually(t, "idle index closed", func() bool { return !r.Stats().Projects[projA].Built })

	// A write to a closed index costs no index work; the next search
	// opens the index and catches up.
	src.Put(projA, "e001", "Entry", "whileclosed")
	refresh(t, r, projA, "e001")
	if st := r.Stats(); st.Batches != 0 {
		t.Fatalf("%d refresh batches applied to a closed index", st.Batches)
	}
	want(t, r, projA, "whileclosed", "e001")
	want(t, r, projA, word(1))
	st := r.Stats()
	if st.IdleClosed < 1 || st.Opened < 1 || st.Builds != 1 {
		t.Fatalf("stats %+v: want ≥ 1 idle close, ≥ 1 reopen and 1 build", st)
	}
}

var (
	manyProjects = flag.Int("search.viele", 50, "TestManySmallProjects: projects")
	manyEntries  = flag.Int("search.je", 200, "TestManySmallProjects: entries per project")
)

// TestManySmallProjectsHoldNoMoreThanOneLarge: P projects of N entries,
// each searched once, hold no more heap once their indexes went idle than
// one project of P×N entries (issue 11 names 200 × 1,000: -search.viele=200
// -search.je=1000, minutes). The heap while they are all open is logged.
func TestManySmallProjectsHoldNoMoreThanOneLarge(t *testing.T) {
	if raceEnabled {
		t.Skip("builds thousands of documents: slow under the race detector")
	}
	p, n := *manyProjects, *manyEntries
	one := newFakeSource()
	fillSource(one, projA, p*n)
	large := heapOf(t, one, []memory.ProjectRef{projA}, time.Hour)

	many := newFakeSource()
	refs := make([]memory.ProjectRef, p)
	for i := range refs {
		refs[i] = memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%03d", i)}
		fillSource(many, refs[i], n)
	}
	open := heapOf(t, many, refs, time.Hour)
	idle := heapOf(t, many, refs, 20*time.Millisecond)
	t.Logf("live heap: 1 × %d entries %d KiB; %d × %d open %d KiB, idle %d KiB", p*n, large>>10, p, n, open>>10, idle>>10)
	if idle > large {
		t.Fatalf("%d idle projects of %d entries hold %d KiB, one of %d entries %d KiB", p, n, idle>>10, p*n, large>>10)
	}
}

// heapOf is the live heap a registry over src holds after one search in
// each of refs (and, when idleClose is short, once all went idle).
func heapOf(t *testing.T, src *fakeSource, refs []memory.ProjectRef, idleClose time.Duration) uint64 {
	before := liveHeap()
	// The large project's build takes minutes at the size.
	r := NewRegistry(src, Options{IdleClose: idleClose, PersistNap: time.Millisecond, IndexWait: time.Hour})
	defer r.Close()
	for _, ref := range refs {
		if _, err := r.Search(context.Background(), ref, memory.SearchQuery{Text: "Datenbank"}); err != nil {
			t.Fatal(err)
		}
	}
	if idleClose < time.Minute {
		eventually(t, "all indexes idle", func() bool { return r.Stats().IdleClosed >= int64(len(refs)) })
	}
	return liveHeap() - min(before, liveHeap())
}

// TestIdleVectorsAreUnloadedAndReloaded: a project's meaning vectors no
// recall used for IdleClose are dropped; the next recall loads them again,
// vectors stored meanwhile included, and still finds by meaning.
func TestIdleVectorsAreUnloadedAndReloaded(t *testing.T) {
	g := newMeaningRigWith(t, MeaningOptions{}, Options{IdleClose: 20 * time.Millisecond, PersistNap: time.Millisecond})
	g.put(t, projA, "ops/release", "Release train", "Releases ship every second Tuesday after rollout review.")
	g.recall(t, []memory.ProjectRef{projA}, backupQuery) // loads the vectors
	eventually(t, "vectors unloaded", func() bool { return g.r.Stats().VectorsUnloaded >= 1 })

	g.put(t, projA, "ops/backups", "Nightly backups", backupNote) // stored while unloaded
	hits := g.recall(t, []memory.ProjectRef{projA}, backupQuery)
	if got := matches(hits); len(got) == 0 || got[0] != "ops/backups:meaning" {
		t.Fatalf("after reload: %v, want ops/backups found by meaning first", got)
	}
}

// openIndexes counts the registry's open project indexes.
func openIndexes(r *Registry) int {
	n := 0
	for _, p := range r.Stats().Projects {
		if p.Built {
			n++
		}
	}
	return n
}

// TestOpenIndexesAreCapped: many goroutines write to and search more
// projects than Options.MaxOpen allows open. Every search finds the write
// its goroutine made just before, in an index the cap may have closed and a
// search reopened (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes), and once they are done
// no more than MaxOpen indexes stay open, the least recently used closed.
func TestOpenIndexesAreCapped(t *testing.T) {
	const maxOpen, projects, workers, rounds = 3, 12, 16, 12
	src := newFakeSource()
	refs := make([]memory.ProjectRef, projects)
	for i := range refs {
		refs[i] = memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%02d", i)}
		fillWords(src, refs[i], 5)
	}
	r := newTestRegistry(t, src, Options{MaxOpen: maxOpen, IdleClose: time.Hour, PersistNap: time.Millisecond})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				ref := refs[(w*7+i*5)%projects]
				slug, text := fmt.Sprintf("w%02d", w), fmt.Sprintf("written%dby%dround", i, w)
				src.Put(ref, slug, "Entry", text)
				if err := r.Refresh(testCtx(t), ref, slug); err != nil {
					t.Errorf("refresh %s %s: %v", ref, slug, err)
					return
				}
				hits, err := r.Search(testCtx(t), ref, memory.SearchQuery{Text: text})
				if err != nil {
					t.Errorf("search %s %q: %v", ref, text, err)
					return
				}
				if got := slugs(hits); len(got) != 1 || got[0] != slug {
					t.Errorf("search %s %q = %v, want [%s]: a write lost across a close by the cap", ref, text, got, slug)
					return
				}
				// The cap's own look comes every capCheckEvery, which a
				// fast machine can outrun: closes amid the others' writes
				// and searches are what this test is about.
				r.closeOverCap()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	eventually(t, "open indexes back under the cap", func() bool { return openIndexes(r) <= maxOpen })

	// The least recently used go first: the three searched last stay open.
	for _, ref := range refs {
		want(t, r, ref, word(1), "e001")
	}
	// Closed by the cap, an index is opened again from disk, not rebuilt.
	if st := r.Stats(); st.CapClosed == 0 || st.IdleClosed != 0 || st.Opened == 0 || st.Builds != projects {
		t.Fatalf("stats %+v: want indexes closed by the cap and reopened, none for idleness, %d builds", st, projects)
	}
	last := refs[projects-maxOpen:]
	eventually(t, "the last searched stay open", func() bool {
		st := r.Stats()
		for _, ref := range last {
			if !st.Projects[ref].Built {
				return false
			}
		}
		return openIndexes(r) == maxOpen
	})
}

// TestNoCapKeepsIndexesOpen: a negative MaxOpen closes nothing for the count.
func TestNoCapKeepsIndexesOpen(t *testing.T) {
	src := newFakeSource()
	r := newTestRegistry(t, src, Options{MaxOpen: -1, IdleClose: time.Hour, PersistNap: time.Millisecond})
	for i := range 5 {
		ref := memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%d", i)}
		fillWords(src, ref, 3)
		want(t, r, ref, word(2), "e002")
	}
	time.Sleep(3 * capCheckEvery)
	if n, st := openIndexes(r), r.Stats(); n != 5 || st.CapClosed != 0 {
		t.Fatalf("%d open, %d closed by a cap, want 5 and 0 without one", n, st.CapClosed)
	}
}
