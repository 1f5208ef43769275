package service

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// pruneRecorder records the prunes asked of it.
type pruneRecorder struct {
	Store
	mu       sync.Mutex
	pruned   []memory.ProjectRef
	projects []memory.ProjectRef
}

func (s *pruneRecorder) AppendSearchLog(context.Context, []memory.SearchLogRow) error { return nil }

func (s *pruneRecorder) PruneSearchLog(_ context.Context, ref memory.ProjectRef, _ time.Time, _ int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruned = append(s.pruned, ref)
	return 0, nil
}

func (s *pruneRecorder) ListProjects(context.Context) ([]memory.ProjectInfo, error) {
	var out []memory.ProjectInfo
	for _, ref := range s.projects {
		out = append(out, memory.ProjectInfo{Ref: ref})
	}
	return out, nil
}

// take returns the projects pruned since the last call, sorted.
func (s *pruneRecorder) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ref := range s.pruned {
		out = append(out, ref.String())
	}
	s.pruned = nil
	slices.Sort(out)
	return out
}

// TestPruneSchedule: the flusher prunes the projects it wrote rows for, at
// most every pruneEvery unless one got pruneAfterRows rows, and every
// project once every pruneAllEvery; with retention off, never.
func TestPruneSchedule(t *testing.T) {
	a := memory.ProjectRef{Workspace: "w", Project: "a"}
	b := memory.ProjectRef{Workspace: "w", Project: "b"}
	c := memory.ProjectRef{Workspace: "x", Project: "c"}
	st := &pruneRecorder{projects: []memory.ProjectRef{a, b, c}}
	l := &searchLog{store: st, log: slog.New(slog.DiscardHandler), keep: retention{rows: 10, now: time.Now}, done: make(chan struct{})}
	rows := func(ref memory.ProjectRef, n int) []memory.SearchLogRow {
		return slices.Repeat([]memory.SearchLogRow{{Project: ref}}, n)
	}
	t0 := time.Now()
	step := func(name string, at time.Duration, want ...string) {
		t.Helper()
		l.maybePrune(t0.Add(at))
		if got := st.take(); !slices.Equal(got, want) {
			t.Fatalf("%s: pruned %v, want %v", name, got, want)
		}
	}
	step("nothing written", 0)
	l.written(rows(a, 1))
	step("first rows", time.Second, "w/a")
	l.written(rows(a, 1))
	l.written(rows(b, 1))
	step("within pruneEvery", 2*time.Second)
	step("pruneEvery later", 2*time.Second+pruneEvery, "w/a", "w/b")
	step("nothing new", 3*time.Second+pruneEvery)
	l.written(rows(b, pruneAfterRows))
	step("pruneAfterRows rows", 4*time.Second+pruneEvery, "w/b")
	step("every project after pruneFirstAfter", pruneFirstAfter, "w/a", "w/b", "x/c")
	step("and not again at once", pruneFirstAfter+pruneEvery)
	step("every project each pruneAllEvery", pruneFirstAfter+pruneAllEvery, "w/a", "w/b", "x/c")

	off := &searchLog{store: st, log: slog.New(slog.DiscardHandler), done: make(chan struct{})}
	off.written(rows(a, 2*pruneAfterRows))
	off.maybePrune(t0.Add(2 * pruneAllEvery))
	if got := st.take(); len(got) != 0 {
		t.Fatalf("retention off pruned %v", got)
	}
}
