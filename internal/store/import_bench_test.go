package store

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/store/storetest"
)

// BenchmarkImportVersions imports 10,000 versions into a fresh project in
// batches of 500, as `munin import` does; it reports versions per second.
// Stage 11 added valid_until, supersedes and settling superseded_by per
// batch to the path; this is where that cost shows.
func BenchmarkImportVersions(b *testing.B) {
	words := strings.Fields(benchContent)
	vs := storetest.Notes(benchEntries, words, rand.New(rand.NewPCG(1, 2)))
	for b.Loop() {
		b.StopTimer()
		s := openTest(b)
		ref := ensure(b, s, "bench", "p")
		b.StartTimer()
		for i := 0; i < len(vs); i += 500 {
			if _, err := s.ImportVersions(context.Background(), ref, vs[i:min(i+500, len(vs))], memory.DefaultMaxContent); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(vs)*b.N)/b.Elapsed().Seconds(), "versions/s")
}
