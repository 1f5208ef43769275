package search

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

// fillSource writes n realistic entries (searchtest.Fill) into ref.
func fillSource(src *fakeSource, ref memory.ProjectRef, n int) {
	searchtest.Fill(func(slug, title, content string, tags ...string) { src.Put(ref, slug, title, content, tags...) }, n)
}

func BenchmarkBuild10k(b *testing.B) {
	src := newFakeSource()
	fillSource(src, projA, 10_000)
	var total time.Duration
	for b.Loop() {
		r := NewRegistry(src, Options{})
		start := time.Now()
		if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "Datenbank"}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		r.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/10k-entries")
}

func BenchmarkRefreshParallel(b *testing.B) {
	src := newFakeSource()
	fillSource(src, projA, 10_000)
	r := newTestRegistry(b, src, Options{})
	if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(16) // many agents writing at once
	var n atomic.Int64
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			slug := fmt.Sprintf("notes/entry-%05d", i%10_000)
			if err := r.Refresh(context.Background(), projA, slug); err != nil {
				b.Error(err)
				return
			}
		}
	})
	el := time.Since(start)
	b.StopTimer()
	st := r.Stats()
	b.ReportMetric(float64(n.Load())/el.Seconds(), "docs/s")
	b.ReportMetric(float64(st.Refreshes)/float64(max(st.Batches, 1)), "docs/batch")
}

func BenchmarkSearch10k(b *testing.B) {
	src := newFakeSource()
	fillSource(src, projA, 10_000)
	r := newTestRegistry(b, src, Options{})
	queries := []string{"Datenbank Entscheidung", "replication latency", "index", "Sicherung backup restore"}
	if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSearchSegments measures a recall over 500 entries after k small
// refresh batches, each a segment until scorch merges them.
func BenchmarkSearchSegments(b *testing.B) {
	for _, k := range []int{0, 10, 25, 50, 100} {
		b.Run(fmt.Sprintf("segments=%d", k), func(b *testing.B) {
			src := newFakeSource()
			fillSource(src, projA, 500)
			r := newTestRegistry(b, src, Options{})
			if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
				b.Fatal(err)
			}
			for i := range k {
				for j := range 2 {
					slug := fmt.Sprintf("notes/entry-%05d", (i*2+j)%500)
					v, _ := src.Latest(context.Background(), projA, slug)
					src.Put(projA, slug, v.Title, v.Content+" more", v.Tags...)
				}
				for j := range 2 {
					if err := r.Queue(projA, fmt.Sprintf("notes/entry-%05d", (i*2+j)%500)); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "Datenbank"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(segments(b, r, projA)), "segments")
		})
	}
}

// BenchmarkSearchProjects measures one recall over 1, 3 and 8 projects of
// 500 entries each (the same entries in each). With one project it is
// Search; with more, every index is searched once more for its statistics
// and once for its hits.
func BenchmarkSearchProjects(b *testing.B) {
	queries := []string{"Datenbank Entscheidung", "replication latency", "index", "Sicherung backup restore"}
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprintf("projects=%d", n), func(b *testing.B) {
			src := newFakeSource()
			refs := make([]memory.ProjectRef, n)
			for i := range refs {
				refs[i] = memory.ProjectRef{Workspace: "ws", Project: fmt.Sprintf("p%d", i)}
				fillSource(src, refs[i], 500)
			}
			r := newTestRegistry(b, src, Options{})
			if _, err := r.SearchProjects(context.Background(), refs, memory.SearchQuery{Text: "x"}); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if _, err := r.SearchProjects(context.Background(), refs, memory.SearchQuery{Text: queries[i%len(queries)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
