package store

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// BenchmarkFeedRead reads a page of 100 changes from the middle of a
// workspace of 4 projects with 20,000 audit rows: of one project (as a
// reader that does not review) and of all four.
func BenchmarkFeedRead(b *testing.B) {
	s := openTest(b)
	projects := []string{"p0", "p1", "p2", "p3"}
	for _, p := range projects {
		ensure(b, s, "ws", p)
	}
	const rows = 20000
	for i := range rows / 100 {
		batch := make([]memory.Version, 0, 100)
		for j := range 100 {
			n := i*100 + j
			batch = append(batch, memory.Version{Slug: fmt.Sprintf("s/%d", n), Version: 1, Title: "t", Content: "c", Agent: "a", CreatedAt: time.Now()})
		}
		ref := memory.ProjectRef{Workspace: "ws", Project: projects[i%len(projects)]}
		if _, err := s.ImportVersions(context.Background(), ref, batch, memory.DefaultMaxContent); err != nil {
			b.Fatal(err)
		}
	}
	page := feedOf(b, s, "ws", memory.FeedQuery{Limit: 1000}, "p0")
	mid := page.Rows[len(page.Rows)/2]
	for _, c := range []struct {
		name     string
		projects []memory.FeedProject
	}{
		{"one-project", []memory.FeedProject{{Project: "p0", Viewer: "v", Private: true}}},
		{"four-projects", []memory.FeedProject{{Project: "p0"}, {Project: "p1"}, {Project: "p2"}, {Project: "p3"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := memory.FeedQuery{Projects: c.projects, Identity: page.Identity, After: mid.ID, Stamp: mid.At.UnixNano(), Limit: 100}
			for b.Loop() {
				p, err := s.FeedRead(context.Background(), "ws", q)
				if err != nil || len(p.Rows) != 100 {
					b.Fatalf("%d rows, %v", len(p.Rows), err)
				}
			}
		})
	}
}

// BenchmarkAppendListened is BenchmarkAppendParallel (NORMAL) with 0 and
// 1,000 commit listeners on the workspace: what the live readers cost the
// writer.
func BenchmarkAppendListened(b *testing.B) {
	for _, listeners := range []int{0, 1000} {
		b.Run(fmt.Sprint(listeners), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Synchronous: "NORMAL"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ref := ensure(b, s, "bench", "p")
			var woken atomic.Int64
			for range listeners {
				stop := s.OnCommit([]string{"bench"}, func() { woken.Add(1) })
				defer stop()
			}
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w := memory.Write{Slug: fmt.Sprintf("notes/n%d", n.Add(1)%1000), Title: "t", Content: benchContent, Agent: "bench"}
					if _, err := s.Append(context.Background(), ref, w); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			if listeners > 0 {
				b.ReportMetric(float64(woken.Load())/float64(listeners), "wakes/listener")
			}
		})
	}
}
