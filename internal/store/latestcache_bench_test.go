package store

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/store/storetest"
)

// hotEntries is the workspace the cache benchmark reads: the entries a busy
// project's recalls keep finding.
const hotEntries = 2_000

// cacheModes are the two sides of a benchmark pair: the latest-version
// cache off, and on at the server's default size.
var cacheModes = []struct {
	name  string
	bytes int64
}{{"off", 0}, {"on", DefaultLatestCacheBytes}}

// BenchmarkLatestWhileWriting reads recall hits (LatestMany of 10 random
// entries) and gets (Get of one) of a 2,000-entry project while
// benchWriters goroutines remember new versions of random entries of it
// without pause, with the latest-version cache off and on
// (DefaultLatestCacheBytes): the pair issue 27's profile asks for. -count
// repeats one side before the other; alternate them by running each side
// on its own, in turns.
func BenchmarkLatestWhileWriting(b *testing.B) {
	// A tiny cache holds few of the entries: nearly every read misses, so
	// it shows what the cache costs a read it cannot answer.
	modes := append(cacheModes[:len(cacheModes):len(cacheModes)], cacheModes[0])
	modes[len(modes)-1].name, modes[len(modes)-1].bytes = "tiny", 64<<10
	for _, read := range []string{"LatestMany10", "Get"} {
		for _, cache := range modes {
			b.Run(read+"/cache="+cache.name, func(b *testing.B) {
				benchLatestWhileWriting(b, read, cache.bytes)
			})
		}
	}
}

// BenchmarkAppendWithLatestCache is what the cache costs the write path
// (its triggers, the changed-slugs read and the invalidation of each batch):
// BenchmarkAppendParallel with the cache off and on.
func BenchmarkAppendWithLatestCache(b *testing.B) {
	for _, cache := range cacheModes {
		b.Run("cache="+cache.name, func(b *testing.B) {
			benchAppendParallel(b, Options{LatestCacheBytes: cache.bytes})
		})
	}
}

func benchLatestWhileWriting(b *testing.B, read string, cacheBytes int64) {
	s := openAtWith(b, b.TempDir(), Options{LatestCacheBytes: cacheBytes})
	ref := ensure(b, s, "bench", "p")
	ctx := context.Background()
	words := strings.Fields(benchContent + " database decision latency replication backup restore cluster deploy")
	vs := storetest.Notes(hotEntries, words, rand.New(rand.NewPCG(1, 2)))
	if _, err := s.ImportVersions(ctx, ref, vs, memory.DefaultMaxContent); err != nil {
		b.Fatal(err)
	}
	slugs := make([]string, len(vs))
	for i := range vs {
		slugs[i] = vs[i].Slug
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := range benchWriters {
		wg.Go(func() { benchRemember(b, s, ref, slugs, uint64(w), stop, &written) })
	}
	defer func() { close(stop); wg.Wait() }()

	rng := rand.New(rand.NewPCG(5, 6))
	pick := make([]string, 10)
	hits, misses := hitsMisses(s)
	b.ReportAllocs()
	b.ResetTimer()
	writes := written.Load()
	for range b.N {
		if read == "Get" {
			if _, _, err := s.Get(ctx, ref, slugs[rng.IntN(len(slugs))], 0); err != nil {
				b.Fatal(err)
			}
			continue
		}
		for i := range pick {
			pick[i] = slugs[rng.IntN(len(slugs))]
		}
		if vs, err := s.LatestMany(ctx, ref, pick); err != nil || len(vs) == 0 {
			b.Fatalf("LatestMany: %d versions, %v", len(vs), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(written.Load()-writes)/b.Elapsed().Seconds(), "writes/s")
	if h, m := hitsMisses(s); h+m > hits+misses {
		b.ReportMetric(float64(h-hits)/float64(h+m-hits-misses), "hit-ratio")
	}
}

func hitsMisses(s *Store) (hits, misses int64) {
	if s.latest == nil {
		return 0, 0
	}
	return s.latest.hits.Load(), s.latest.misses.Load()
}

// benchWriters remember concurrently beside the reads: the load test's 32
// agents with 30 % remember keep about ten writes under way.
const benchWriters = 8

// benchRemember writes new versions of random slugs until stop closes.
func benchRemember(b *testing.B, s *Store, ref memory.ProjectRef, slugs []string, seed uint64, stop <-chan struct{}, written *atomic.Int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, seed))
	for {
		select {
		case <-stop:
			return
		default:
		}
		w := memory.Write{Slug: slugs[rng.IntN(len(slugs))], Title: "t", Content: benchContent, Tags: []string{"a", "b"}, Agent: "bench"}
		if _, err := s.Append(ctx, ref, w); err != nil {
			b.Error(err)
			return
		}
		written.Add(1)
	}
}
