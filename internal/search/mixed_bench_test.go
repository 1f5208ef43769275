//go:build unix

package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/searchbench"
)

// BenchmarkMixed500 is the load test's mixed load below the transports: 32
// agents (run with -cpu=2, 16 per core) on one project of 500 entries, each
// call a write to one of 20 contested slugs (30 %), a one-word recall
// (47 %) or a read (23 %). It reports the CPU per call, how many slugs a
// refresh batch applies, and the recalls' p99 (which includes the wait for
// the writes queued before them).
func BenchmarkMixed500(b *testing.B) {
	terms := mixTerms
	src := newFakeSource()
	for i := range 500 {
		a, c := terms[i%len(terms)], terms[(i/len(terms)+i+1)%len(terms)]
		src.Put(projA, fmt.Sprintf("wissen/eintrag-%04d", i), "",
			fmt.Sprintf("Notiz %d zu %s und %s\n\nWas das Team über %s beschlossen hat und warum; offen bleibt die Frage nach %s.", i, a, c, a, c), a)
	}
	r := newTestRegistry(b, src, Options{})
	ctx := context.Background()
	if _, err := r.Search(ctx, projA, memory.SearchQuery{Text: "x"}); err != nil {
		b.Fatal(err)
	}
	before := r.Stats()
	var (
		seed atomic.Uint64
		mu   sync.Mutex
		lat  []time.Duration
	)
	b.SetParallelism(16)
	cpu := searchbench.CPUTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := seed.Add(1)
		rng := rand.New(rand.NewPCG(id, 7))
		var mine []time.Duration
		for n := 0; pb.Next(); n++ {
			switch x := rng.IntN(300); {
			case x < 90:
				slug := fmt.Sprintf("gemeinsam-%02d", rng.IntN(20))
				src.Put(projA, slug, "", fmt.Sprintf("qy%dy%dy: Stand von agent-%03d, Schritt %d; %s", id, n, id, n, terms[n%len(terms)]))
				if err := r.Queue(projA, slug); err != nil {
					b.Error(err)
					return
				}
			case (x-90)%3 < 2:
				start := time.Now()
				if _, err := r.SearchProjects(ctx, []memory.ProjectRef{projA}, memory.SearchQuery{Text: terms[rng.IntN(len(terms))]}); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			default:
				if _, _, err := src.Get(ctx, projA, fmt.Sprintf("wissen/eintrag-%04d", rng.IntN(500)), 1); err != nil {
					b.Error(err)
					return
				}
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64((searchbench.CPUTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	st := r.Stats()
	if batches := st.Batches - before.Batches; batches > 0 {
		b.ReportMetric(float64(st.Refreshes-before.Refreshes)/float64(batches), "slugs/batch")
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "recall-p99-µs")
	}
}
