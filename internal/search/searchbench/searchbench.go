//go:build unix

// Package searchbench holds what the recall benchmarks of internal/search
// and internal/search/quality share: the CPU clock and the recall loop. Only
// benchmarks import it.
package searchbench

import (
	"context"
	"syscall"
	"testing"
	"time"

	"munin/internal/memory"
)

// CPUTime is the CPU time the process used so far, all threads (the garbage
// collector's included): on a machine shared with other work, ns/op counts
// the waiting for a core too, this does not.
func CPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Searcher is the search registry as the recall loop uses it.
type Searcher interface {
	SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
}

// Recall opens refs' indexes with one search and recalls each query once
// (the scorer keeps bounds and impact lists of a word per segment, built by
// its first recall), then recalls the queries in turn (limit 10) for b.N
// rounds and reports the CPU per recall (cpu-µs/op) and the hits per
// recall.
func Recall(b *testing.B, r Searcher, refs []memory.ProjectRef, queries []string) {
	ctx := context.Background()
	for _, q := range append([]string{"x"}, queries...) {
		if _, err := r.SearchProjects(ctx, refs, memory.SearchQuery{Text: q, Limit: 10}); err != nil {
			b.Fatal(err)
		}
	}
	i, hits := 0, 0
	cpu := CPUTime(b)
	for b.Loop() {
		hs, err := r.SearchProjects(ctx, refs, memory.SearchQuery{Text: queries[i%len(queries)], Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		hits += len(hs)
		i++
	}
	b.ReportMetric(float64((CPUTime(b)-cpu).Microseconds())/float64(i), "cpu-µs/op")
	b.ReportMetric(float64(hits)/float64(i), "hits/op")
}
