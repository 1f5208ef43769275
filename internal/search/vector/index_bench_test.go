package vector

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkVecIndexTopK is one exact cosine search, top 20, over a project of
// 100,000 vectors of the sizes common embedding models have (384:
// all-MiniLM-L6-v2, multilingual-e5-small; 768: nomic-embed-text,
// multilingual-e5-base; 1024: bge-m3, mxbai-embed-large), and of 10,000.
// ns/op is the meaning path's scan per project.
func BenchmarkVecIndexTopK(b *testing.B) {
	for _, size := range []struct{ n, dim int }{{100_000, 384}, {100_000, 768}, {100_000, 1024}, {10_000, 768}} {
		n, dim := size.n, size.dim
		b.Run(fmt.Sprintf("n=%d/dim=%d", n, dim), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(dim)))
			x := NewIndex()
			v := make([]float32, dim)
			for i := range n {
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				x.Upsert(fmt.Sprintf("e/%d", i), 1, v)
			}
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			q, _ := Normalized(v)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got, ok := x.TopK(q, 20, 0); !ok || len(got) != 20 {
					b.Fatalf("topK: %d hits, ok %v", len(got), ok)
				}
			}
		})
	}
}
