package search

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"munin/internal/memory"
)

// TestHitsShowLatestVersion: a hit shows its entry's latest version, read after
// the search. An entry forgotten after the index matched it (its refresh not yet
// applied) is left out, so it never comes back (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes); one replaced meanwhile
// shows the new version.
func TestHitsShowLatestVersion(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "gone", "Gone", "zebra crossing")
	src.Put(projA, "moved", "Moved", "zebra stripes")
	src.Put(projA, "kept", "Kept", "zebra herd")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "zebra")); len(got) != 3 {
		t.Fatalf("before: %v, want 3 hits", got)
	}
	// Committed, not yet queued: the index still holds the old versions.
	src.Forget(projA, "gone")
	src.Put(projA, "moved", "Moved on", "zebra stripes, renamed")
	hits := find(t, r, projA, "zebra")
	got := map[string]memory.Hit{}
	for _, h := range hits {
		got[h.Slug] = h
	}
	if _, ok := got["gone"]; ok || len(hits) != 2 {
		t.Errorf("hits %v: the forgotten entry came back", slugs(hits))
	}
	if h := got["moved"]; h.Version != 2 || h.Title != "Moved on" {
		t.Errorf("moved: version %d %q, want the latest (2, Moved on)", h.Version, h.Title)
	}
}

// manyFake is a fakeSource that rereads many slugs at once, as the store
// does, and counts its reads.
type manyFake struct {
	*fakeSource
	mu                 sync.Mutex
	many, latest, gets int
}

func (s *manyFake) LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error) {
	s.mu.Lock()
	s.many++
	s.mu.Unlock()
	out := map[string]memory.Version{}
	for _, slug := range slugs {
		if v, err := s.fakeSource.Latest(ctx, ref, slug); err == nil {
			out[slug] = v
		}
	}
	return out, nil
}

func (s *manyFake) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	s.mu.Lock()
	s.latest++
	s.mu.Unlock()
	return s.fakeSource.Latest(ctx, ref, slug)
}

func (s *manyFake) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.fakeSource.Get(ctx, ref, slug, version)
}

// TestHitsReadOncePerProject: a Source that rereads many slugs at once is
// asked once per project for all of a recall's hits, not once per hit.
func TestHitsReadOncePerProject(t *testing.T) {
	src := &manyFake{fakeSource: newFakeSource()}
	for i := range 6 {
		src.Put(projA, fmt.Sprintf("a%d", i), "A", "zebra")
		src.Put(projB, fmt.Sprintf("b%d", i), "B", "zebra")
	}
	r := newTestRegistry(t, src, Options{})
	hits, err := r.SearchProjects(testCtx(t), []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "zebra"})
	if err != nil || len(hits) != 10 {
		t.Fatalf("%d hits, %v; want 10", len(hits), err)
	}
	if src.many != 2 || src.latest != 0 || src.gets != 0 {
		t.Errorf("reads: %d LatestMany, %d Latest, %d Get; want 2 LatestMany (one per project)", src.many, src.latest, src.gets)
	}
}

// TestMeaningHitsReadOncePerProject: the hits only the meaning path found
// are read from a Source that rereads many slugs at once in one call per
// project, not one per hit; a forgotten one is left out.
func TestMeaningHitsReadOncePerProject(t *testing.T) {
	src := &manyFake{fakeSource: newFakeSource()}
	vecs, emb := &fakeVectors{}, &conceptEmbedder{}
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler),
		Meaning: MeaningOptions{Embedder: emb, Vectors: vecs}})
	emb.fix("vector probe", 1, 0, 0)
	for i := range 4 {
		slug := fmt.Sprintf("m%d", i)
		v := src.Put(projA, slug, slug, fmt.Sprintf("unrelated words %d", i))
		refresh(t, r, projA, slug)
		mv := memory.Vector{Project: projA, Slug: slug, Version: v.Version, Model: testModel, Values: []float32{1, float32(i) / 10, 0}}
		vecs.store(mv)
		r.OnStored([]memory.Vector{mv})
	}
	src.Forget(projA, "m3") // committed, not yet queued: its vector is still there
	src.mu.Lock()
	src.many, src.latest, src.gets = 0, 0, 0
	src.mu.Unlock()
	hits, err := r.SearchProjects(testCtx(t), []memory.ProjectRef{projA}, memory.SearchQuery{Text: "vector probe"})
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(hits); !slices.Equal(got, []string{"m0:meaning", "m1:meaning", "m2:meaning"}) {
		t.Errorf("hits %v, want m0 m1 m2 by meaning (m3 forgotten)", got)
	}
	if src.many != 1 || src.latest != 0 || src.gets != 0 {
		t.Errorf("reads: %d LatestMany, %d Latest, %d Get; want 1 LatestMany", src.many, src.latest, src.gets)
	}
}
