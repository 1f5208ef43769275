package search

import (
	"context"
	"flag"
	"fmt"
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
