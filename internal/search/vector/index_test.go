package vector

import (
	"math"
	"slices"
	"testing"

	"munin/internal/memory"
)

// TestIndexTopK: the most similar vectors come first, ties by slug, at most
// k of them and none at or below the floor; a query of another dimension is
// refused.
func TestIndexTopK(t *testing.T) {
	x := NewIndex()
	for _, v := range []struct {
		slug string
		vec  []float32
	}{{"east", []float32{1, 0}}, {"north", []float32{0, 1}}, {"ne-b", []float32{1, 1}}, {"ne-a", []float32{2, 2}}, {"west", []float32{-1, 0}}} {
		if !x.Upsert(v.slug, 1, v.vec) {
			t.Fatalf("upsert %s refused", v.slug)
		}
	}
	got, ok := x.TopK([]float32{1, 0}, 3, 0)
	var slugs []string
	for _, n := range got {
		slugs = append(slugs, n.Slug)
	}
	if !ok || !slices.Equal(slugs, []string{"east", "ne-a", "ne-b"}) {
		t.Fatalf("top 3 = %v (ok %v), want east, then the tie ne-a, ne-b by slug", slugs, ok)
	}
	if math.Abs(float64(got[1].Sim)-math.Sqrt(0.5)) > 1e-6 {
		t.Fatalf("similarity of ne-a %v, want %v", got[1].Sim, math.Sqrt(0.5))
	}
	if got, _ := x.TopK([]float32{1, 0}, 10, 0); len(got) != 3 {
		t.Fatalf("above floor 0: %d hits, want 3 (north is orthogonal, west opposite)", len(got))
	}
	if _, ok := x.TopK([]float32{1, 0, 0}, 3, 0); ok {
		t.Fatal("a query of another dimension was answered")
	}
}

// TestIndexUpsertAndRemove: a newer version replaces a vector, an older one
// arriving late does not; Remove drops a vector only if it is not newer
// than the version named; vectors of another dimension, zero or not finite
// are refused.
func TestIndexUpsertAndRemove(t *testing.T) {
	x := NewIndex()
	x.Upsert("a", 2, []float32{1, 0})
	x.Upsert("a", 1, []float32{0, 1}) // late: ignored
	if got, _ := x.TopK([]float32{1, 0}, 1, 0); len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("after a late older vector: %+v, want version 2", got)
	}
	for _, bad := range [][]float32{{1, 0, 0}, {0, 0}, {float32(math.NaN()), 1}, {float32(math.Inf(1)), 1}, nil} {
		if x.Upsert("b", 1, bad) {
			t.Errorf("upsert %v accepted", bad)
		}
	}
	x.Upsert("b", 1, []float32{0, 1})
	x.Remove("a", 1) // older than the one held: kept
	if x.Size() != 2 {
		t.Fatalf("size %d after removing an older version, want 2", x.Size())
	}
	x.Remove("a", 2)
	if got, _ := x.TopK([]float32{0, 1}, 5, -1); x.Size() != 1 || len(got) != 1 || got[0].Slug != "b" {
		t.Fatalf("after remove: size %d, hits %+v, want only b", x.Size(), got)
	}
}

// TestCommonDim: the dimension most vectors have wins, the larger of a tie,
// so a stray vector of another dimension does not set it.
func TestCommonDim(t *testing.T) {
	vec := func(dim int) memory.Vector { return memory.Vector{Values: make([]float32, dim)} }
	for _, c := range []struct {
		vs   []memory.Vector
		want int
	}{
		{nil, 0},
		{[]memory.Vector{vec(3), vec(384), vec(384)}, 384},
		{[]memory.Vector{vec(384), vec(768)}, 768},
	} {
		if got := CommonDim(c.vs); got != c.want {
			t.Errorf("CommonDim of %d vectors = %d, want %d", len(c.vs), got, c.want)
		}
	}
}
