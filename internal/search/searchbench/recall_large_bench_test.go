//go:build unix

package searchbench_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/search/searchbench"
	"munin/internal/search/searchtest"
)

var projL = memory.ProjectRef{Workspace: "ws", Project: "large"}

// BenchmarkRecallLarge measures recall of frequent words through the public
// search path (SearchProjects, limit 10, snippets included) at 10k and 100k
// entries (-short: 10k only), cpu-µs/op the CPU per recall:
//
//   - uniform is searchtest.Fill, BenchmarkRecall10k's worst case: each
//     query word in most entries;
//   - zipf draws titles and content from 5,000 words Zipf-distributed, as
//     the load test's data, and recalls one of the 20 most frequent words,
//     as its "frequent" series does.
func BenchmarkRecallLarge(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("uniform/%dk", n/1000), func(b *testing.B) {
			src := searchtest.NewSource()
			searchtest.Fill(func(slug, title, content string, tags ...string) { src.Put(projL, slug, title, content, tags...) }, n)
			recall(b, src, []string{"Datenbank Entscheidung", "replication latency backup", "Sicherung Wiederherstellung",
				"deploy rollout agent", "Konfiguration Schema Migration", "cache invalidation"})
		})
		b.Run(fmt.Sprintf("zipf/%dk", n/1000), func(b *testing.B) {
			src := searchtest.NewSource()
			rng := rand.New(rand.NewPCG(9, 27))
			z := rand.NewZipf(rng, 1.1, 2, 4999)
			words := func(k int) string {
				out := make([]string, k)
				for i := range out {
					out[i] = zipfWord(z.Uint64())
				}
				return strings.Join(out, " ")
			}
			for i := range n {
				src.Put(projL, fmt.Sprintf("n%06d", i), words(3), words(60))
			}
			var qs []string
			for r := range uint64(20) {
				qs = append(qs, zipfWord(r))
			}
			recall(b, src, qs)
		})
	}
}

func zipfWord(r uint64) string { return fmt.Sprintf("w%dx", r) }

// recall builds the index (waiting as long as that takes) and runs the
// recall loop.
func recall(b *testing.B, src *searchtest.Source, queries []string) {
	r := search.NewRegistry(src, search.Options{IndexWait: 30 * time.Minute})
	b.Cleanup(func() { r.Close() })
	searchbench.Recall(b, r, []memory.ProjectRef{projL}, queries)
}
