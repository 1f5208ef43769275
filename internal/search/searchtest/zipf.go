package searchtest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"munin/internal/memory"
)

// PutZipf fills ref with n entries of Zipf-distributed words (s = 1.1 over
// 5,000 words, 3 in the title, 60 in the content, the same for every call):
// the frequent words are in most entries, as in the load test's data.
func PutZipf(src *Source, ref memory.ProjectRef, n int) {
	rng := rand.New(rand.NewPCG(9, 27))
	z := rand.NewZipf(rng, 1.1, 2, 4999)
	words := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = ZipfWord(z.Uint64())
		}
		return strings.Join(out, " ")
	}
	for i := range n {
		src.Put(ref, fmt.Sprintf("n%06d", i), words(3), words(60))
	}
}

// ZipfWord is the word of rank r of PutZipf's corpus (0: the most frequent).
func ZipfWord(r uint64) string { return fmt.Sprintf("w%dx", r) }

// ZipfQueries are PutZipf's 20 most frequent words, one query each.
func ZipfQueries() []string {
	var qs []string
	for r := range uint64(20) {
		qs = append(qs, ZipfWord(r))
	}
	return qs
}
