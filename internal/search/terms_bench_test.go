package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
)

// BenchmarkQueryTerms measures a recall's cost by its number of distinct
// common terms over 900 entries of ~2 KB drawn from a 400-word vocabulary:
// (200 five-byte words fill the 1 KB query limit); the cost grows with the
// terms, which memory.MaxQueryTerms caps at 32: 200 measures the refusal.
func BenchmarkQueryTerms(b *testing.B) {
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%c%c%c", 'b'+i/100, 'b'+i/10%10, 'b'+i%10)
	}
	src := newFakeSource()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 900 {
		var sb strings.Builder
		for sb.Len() < 2048 {
			sb.WriteString(vocab[rng.IntN(len(vocab))])
			sb.WriteByte(' ')
		}
		src.Put(projA, fmt.Sprintf("e%04d", i), vocab[rng.IntN(len(vocab))], sb.String())
	}
	r := newTestRegistry(b, src, Options{})
	if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "warm"}); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 8, 32, 200} {
		q := strings.Join(vocab[:n], " ")
		b.Run(fmt.Sprintf("terms=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: q})
				// Past the cap the search is refused: this measures the refusal.
				if refused := memory.ErrorCode(err) == memory.CodeInvalid; err != nil && !(refused && n > memory.MaxQueryTerms) {
					b.Fatal(err)
				}
			}
		})
	}
}
