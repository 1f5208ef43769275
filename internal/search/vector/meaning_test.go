package vector

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

type fixedEmbedder struct{}

func (fixedEmbedder) Model() string { return "m" }

// Embed makes "east" and "north" the unit axes.
func (fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = map[string][]float32{"east": {1, 0}, "north": {0, 1}}[t]
	}
	return out, nil
}

type fakeVectors struct {
	mu    sync.Mutex
	vs    []memory.Vector
	loads int
}

func (f *fakeVectors) Vectors(_ context.Context, ref memory.ProjectRef, model string) ([]memory.Vector, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	var out []memory.Vector
	for _, v := range f.vs {
		if v.Project == ref && v.Model == model {
			out = append(out, v)
		}
	}
	return out, nil
}

// TestMeaningLoadsStoresAndUnloads: a project's vectors are loaded on its
// first search, vectors stored later are added, a vector the store no
// longer backs is forgotten, and idle vectors are dropped and loaded again.
func TestMeaningLoadsStoresAndUnloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ref := memory.ProjectRef{Workspace: "ws", Project: "p"}
	src := &fakeVectors{vs: []memory.Vector{{Project: ref, Slug: "a", Version: 1, Model: "m", Values: []float32{1, 0.1}}}}
	if New(ctx, Options{Vectors: src}, slog.Default()) != nil {
		t.Fatal("meaning on without an embedder")
	}
	m := New(ctx, Options{Embedder: fixedEmbedder{}, Vectors: src}, slog.Default())
	hits, err := m.Search(ctx, []memory.ProjectRef{ref}, "east", 5)
	if err != nil || len(hits) != 1 || hits[0].Slug != "a" || hits[0].Ref != ref {
		t.Fatalf("first search: %+v, %v; want a", hits, err)
	}
	m.OnStored([]memory.Vector{
		{Project: ref, Slug: "b", Version: 1, Model: "m", Values: []float32{0.1, 1}},
		{Project: ref, Slug: "c", Version: 1, Model: "other", Values: []float32{0, 1}},
	})
	hits, err = m.Search(ctx, []memory.ProjectRef{ref}, "north", 5)
	if err != nil || len(hits) != 2 || hits[0].Slug != "b" {
		t.Fatalf("after OnStored: %+v, %v; want b first, c (another model) absent", hits, err)
	}
	m.Forget(hits[0])
	if hits, _ := m.Search(ctx, []memory.ProjectRef{ref}, "north", 5); len(hits) != 1 || hits[0].Slug != "a" {
		t.Fatalf("after Forget(b): %+v, want a only", hits)
	}
	if n := m.UnloadIdle(time.Now().Add(time.Hour).UnixNano()); n != 1 {
		t.Fatalf("UnloadIdle dropped %d projects, want 1", n)
	}
	if _, err := m.Search(ctx, []memory.ProjectRef{ref}, "east", 5); err != nil || src.loads != 2 {
		t.Fatalf("search after unload: %v, %d loads; want the vectors loaded again", err, src.loads)
	}
}
