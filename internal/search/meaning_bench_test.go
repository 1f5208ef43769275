package search

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkVecIndexTopK is one exact cosine search, top 20, over a project of
// 100,000 vectors of the sizes common embedding models have (384:
// all-MiniLM-L6-v2, multilingual-e5-small; 768: nomic-embed-text,
// multilingual-e5-base). ns/op is the meaning path's scan per project.
func BenchmarkVecIndexTopK(b *testing.B) {
	for _, dim := range []int{384, 768} {
		b.Run(fmt.Sprintf("n=100000/dim=%d", dim), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(dim)))
			x := newVecIndex()
			v := make([]float32, dim)
			for i := range 100_000 {
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				x.upsert(fmt.Sprintf("e/%d", i), 1, v)
			}
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			q, _ := normalized(v)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got, ok := x.topK(q, 20, 0); !ok || len(got) != 20 {
					b.Fatalf("topK: %d hits, ok %v", len(got), ok)
				}
			}
		})
	}
}
