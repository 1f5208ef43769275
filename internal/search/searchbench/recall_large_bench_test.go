//go:build unix

package searchbench_test

import (
	"fmt"
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
			searchtest.PutZipf(src, projL, n)
			recall(b, src, searchtest.ZipfQueries())
		})
	}
}

// recall builds the index (waiting as long as that takes) and runs the
// recall loop.
func recall(b *testing.B, src *searchtest.Source, queries []string) {
	r := search.NewRegistry(src, search.Options{IndexWait: 30 * time.Minute})
	b.Cleanup(func() { r.Close() })
	searchbench.Recall(b, r, []memory.ProjectRef{projL}, queries)
}
