package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/store/storetest"
)

// benchContent is a typical entry: a few sentences.
var benchContent = strings.Repeat("Munin remembers what agents decided and why. ", 5)

// openRawWriter opens a migrated workspace file on one connection with the
// writer's DSN (same pragmas as the server), bypassing the store.
func openRawWriter(b *testing.B, synchronous string) *RawWriter {
	b.Helper()
	db, err := OpenRawWriter(context.Background(), filepath.Join(b.TempDir(), "raw.db"), synchronous)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// rawInsert inserts rows version rows in one transaction.
func rawInsert(b *testing.B, db *RawWriter, rows int) {
	if err := db.Insert(rows, benchContent); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRawInsert is the floor of "1.2 raw write throughput of one
// workspace file": one version row per BEGIN IMMEDIATE … COMMIT.
// Both synchronous modes the server offers are measured side by side.
func BenchmarkRawInsert(b *testing.B) {
	for _, mode := range syncModes {
		b.Run(mode, func(b *testing.B) {
			db := openRawWriter(b, mode)
			b.ResetTimer()
			for range b.N {
				rawInsert(b, db, 1)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

var syncModes = []string{"NORMAL", "FULL"}

// BenchmarkRawInsertBatch64 is the ceiling group commit can approach: 64
// version rows per transaction.
func BenchmarkRawInsertBatch64(b *testing.B) {
	db := openRawWriter(b, "NORMAL")
	b.ResetTimer()
	for range b.N {
		rawInsert(b, db, 64)
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkAppendParallel measures Append (version + entry + audit row, group
// committed) from about 32 goroutines on one workspace.
func BenchmarkAppendParallel(b *testing.B) {
	for _, mode := range syncModes {
		b.Run(mode, func(b *testing.B) { benchAppendParallel(b, Options{Synchronous: mode}) })
	}
}

func benchAppendParallel(b *testing.B, opts Options) {
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ref := memory.ProjectRef{Workspace: "bench", Project: "p"}
	if _, err := s.EnsureProject(context.Background(), ref); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	var n atomic.Int64
	before := s.Stats()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := n.Add(1)
			w := memory.Write{Slug: fmt.Sprintf("notes/n%d", i%1000), Title: "t", Content: benchContent, Tags: []string{"a", "b"}, Agent: "bench"}
			if _, err := s.Append(ctx, ref, w); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	after := s.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	if batches := after.Batches - before.Batches; batches > 0 {
		b.ReportMetric(float64(after.Writes-before.Writes)/float64(batches), "writes/batch")
	}
}

// BenchmarkLatestMany rereads 10 of 20 contested slugs with 1,000 versions
// each, as one index refresh batch does under the load test.
func BenchmarkLatestMany(b *testing.B) {
	s := openUncached(b)
	ref := ensure(b, s, "bench", "p")
	ctx := context.Background()
	for v := range 1000 {
		for i := range 20 {
			w := memory.Write{Slug: fmt.Sprintf("gemeinsam-%02d", i), Content: fmt.Sprintf("%s %d", benchContent, v), Agent: "bench"}
			if _, err := s.Append(ctx, ref, w); err != nil {
				b.Fatal(err)
			}
		}
	}
	slugs := make([]string, 10)
	for i := range slugs {
		slugs[i] = fmt.Sprintf("gemeinsam-%02d", i*2)
	}
	b.ResetTimer()
	for range b.N {
		if vs, err := s.LatestMany(ctx, ref, slugs); err != nil || len(vs) != len(slugs) {
			b.Fatalf("LatestMany: %d versions, %v", len(vs), err)
		}
	}
}

// openUncached opens a store without the latest-version cache: the read
// benchmarks here measure SQLite (latestcache_bench_test.go the cache).
func openUncached(b *testing.B) *Store {
	return openAtWith(b, b.TempDir(), Options{})
}

// benchEntries is the size of the workspace the read benchmarks use: the
// size the recall goal is measured at.
const benchEntries = 10_000

// fillBench opens a store with one project of benchEntries entries of
// about 60 words and two tags each, imported in batches (fast: one
// transaction per 1,000 versions), and returns it with the entries' slugs.
func fillBench(b *testing.B) (*Store, memory.ProjectRef, []string) {
	b.Helper()
	s := openUncached(b)
	ref := ensure(b, s, "bench", "p")
	words := strings.Fields(benchContent + " database decision latency replication backup restore cluster deploy")
	vs := storetest.Notes(benchEntries, words, rand.New(rand.NewPCG(1, 2)))
	slugs := make([]string, len(vs))
	for i := range vs {
		slugs[i] = vs[i].Slug
	}
	for i := 0; i < len(vs); i += 1000 {
		if _, err := s.ImportVersions(context.Background(), ref, vs[i:min(i+1000, len(vs))], memory.DefaultMaxContent); err != nil {
			b.Fatal(err)
		}
	}
	return s, ref, slugs
}

// BenchmarkGet reads the latest version of a random entry of a
// 10,000-entry workspace, as every get call does.
func BenchmarkGet(b *testing.B) {
	s, ref, slugs := fillBench(b)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for range b.N {
		if _, _, err := s.Get(ctx, ref, slugs[rng.IntN(len(slugs))], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLatestManyRandom rereads 10 random entries of a 10,000-entry
// workspace, as a recall reads its hits.
func BenchmarkLatestManyRandom(b *testing.B) {
	s, ref, slugs := fillBench(b)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	pick := make([]string, 10)
	b.ResetTimer()
	for range b.N {
		for i := range pick {
			pick[i] = slugs[rng.IntN(len(slugs))]
		}
		if _, err := s.LatestMany(ctx, ref, pick); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChanges is the index refresh's read after a write: the changes
// of a 10,000-entry workspace since the mark before its last write (one
// entry).
func BenchmarkChanges(b *testing.B) {
	s, ref, slugs := fillBench(b)
	ctx := context.Background()
	mark, err := s.ScanLatestSeq(ctx, ref, func(memory.Version) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	put(b, s, ref, slugs[len(slugs)/2], benchContent, "db")
	b.ResetTimer()
	for range b.N {
		n := 0
		if _, err := s.Changes(ctx, ref, mark, func(memory.Version) error { n++; return nil }); err != nil || n != 1 {
			b.Fatalf("Changes: %d versions, %v", n, err)
		}
	}
}
