package search

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"munin/internal/memory"
)

// BenchmarkRecallMeaning is one recall of a project of 10,000 entries with
// 384-dimension vectors, by words alone and fused with meaning (the query's
// vector cached, so the endpoint's time is not in it): what the meaning path
// adds to a recall besides the query's embedding.
func BenchmarkRecallMeaning(b *testing.B) {
	const n, dim = 10_000, 384
	src := newFakeSource()
	fillSource(src, projA, n)
	rng := rand.New(rand.NewPCG(3, 4))
	vecs, emb := &fakeVectors{}, &conceptEmbedder{}
	random := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		return v
	}
	for i := range n {
		vecs.store(memory.Vector{Project: projA, Slug: fmt.Sprintf("notes/entry-%05d", i), Version: 1, Model: testModel, Values: random()})
	}
	const query = "Datenbank Sicherung restore"
	emb.fix(query, random()...)
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("meaning=%v", on), func(b *testing.B) {
			opts := Options{}
			if on {
				opts.Meaning = MeaningOptions{Embedder: emb, Vectors: vecs}
			}
			r := newTestRegistry(b, src, opts)
			q := memory.SearchQuery{Text: query}
			searchAll(b, r, []memory.ProjectRef{projA}, q) // build and load
			b.ResetTimer()
			for b.Loop() {
				if hits := searchAll(b, r, []memory.ProjectRef{projA}, q); len(hits) != DefaultLimit {
					b.Fatalf("%d hits", len(hits))
				}
			}
		})
	}
}
