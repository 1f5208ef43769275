package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
	"munin/internal/search/index"
	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// Memory of the in-memory index per byte of text. docs/search.md states
// these numbers; rerun with
//
//	go test ./internal/search/ -run '^$' -bench IndexMemory -benchtime 1x -count 3
//
// heap-B/text-B is the live heap after GC that the built index adds, per
// byte of indexed content; build-ms/MB the build time per MB of content.

// memCorpus is a corpus of entries for the memory benchmark.
type memCorpus struct {
	name    string
	entries int
	gen     func(rng *rand.Rand) string
	// refresh writes the entries one by one after the build, each its own
	// refresh batch, as remember calls do (an attacker's path).
	refresh bool
}

var memCorpora = []memCorpus{
	// The attack of threat 2 (Stufe 5, AUSBAUSTUFEN.md): 64 KB of random words, nearly every word unique.
	{"random64k", 32, func(rng *rand.Rand) string { return searchtest.RandomWords(rng, 64<<10) }, false},
	// Team notes: ~2 KB of prose over a Zipf-distributed vocabulary.
	{"prose2k", 1024, func(rng *rand.Rand) string { return searchtest.Prose(rng, 2<<10) }, false},
	{"random64k-refreshed", 32, func(rng *rand.Rand) string { return searchtest.RandomWords(rng, 64<<10) }, true},
}

// liveHeap is the live heap after two GCs.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// indexMemory builds a project index over c and returns the live heap it
// adds and the bytes of content it indexed, and how long the build took.
func indexMemory(tb testing.TB, c memCorpus, opts Options) (heap, text uint64, build time.Duration) {
	src := newFakeSource()
	rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
	contents := make([]string, c.entries) // made before the heap is measured
	for i := range contents {
		contents[i] = c.gen(rng)
		text += uint64(len(contents[i]))
	}
	put := func(i int) {
		src.Put(projA, fmt.Sprintf("notes/entry-%05d", i), fmt.Sprintf("Entry %d", i), contents[i], "tag")
	}
	if !c.refresh {
		for i := range c.entries {
			put(i)
		}
	}
	before := liveHeap()
	r := NewRegistry(src, opts)
	defer r.Close()
	start := time.Now()
	if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "entry"}); err != nil {
		tb.Fatal(err)
	}
	for i := range c.entries * btoi(c.refresh) {
		put(i)
		if err := r.Refresh(context.Background(), projA, fmt.Sprintf("notes/entry-%05d", i)); err != nil {
			tb.Fatal(err)
		}
	}
	build = time.Since(start)
	after := liveHeap()
	runtime.KeepAlive(r)
	runtime.KeepAlive(src)
	runtime.KeepAlive(contents)
	if after < before {
		return 0, text, build
	}
	return after - before, text, build
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func BenchmarkIndexMemory(b *testing.B) {
	for _, c := range memCorpora {
		b.Run(c.name, func(b *testing.B) {
			var heap, text uint64
			var build time.Duration
			for b.Loop() {
				h, t, d := indexMemory(b, c, Options{IndexWait: time.Hour})
				heap, text, build = heap+h, text+t, build+d
			}
			b.ReportMetric(float64(heap)/float64(text), "heap-B/text-B")
			b.ReportMetric(float64(build.Milliseconds())/(float64(text)/(1<<20)), "build-ms/MB")
		})
	}
}

// BenchmarkIndexMemoryVariants measures what term vectors and stored text
// would cost again, by switching them on in the shipped mapping's text fields.
// (The second language field, gone for text/stems.go, cost about as much as the
// first: half the index of random words.)
func BenchmarkIndexMemoryVariants(b *testing.B) {
	variants := []struct {
		name   string
		change func(fm *mappingField)
	}{
		{"shipped", func(*mappingField) {}},
		{"with-vectors", func(fm *mappingField) { fm.IncludeTermVectors = fm.Type == "text" && fm.Analyzer == text.AnalyzerEN }},
		{"with-stored-text", func(fm *mappingField) { fm.Store = fm.Store || fm.Type == "text" }},
	}
	for _, c := range memCorpora {
		c.entries /= 2
		for _, v := range variants {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				var heap, text uint64
				var build time.Duration
				for b.Loop() {
					h, t, d := indexMemoryMapped(b, c, v.change)
					heap, text, build = heap+h, text+t, build+d
				}
				b.ReportMetric(float64(heap)/float64(text), "heap-B/text-B")
				b.ReportMetric(float64(build.Milliseconds())/(float64(text)/(1<<20)), "build-ms/MB")
			})
		}
	}
}

type mappingField = mapping.FieldMapping

// indexMemoryMapped is indexMemory with every field of the mapping changed.
func indexMemoryMapped(tb testing.TB, c memCorpus, change func(*mappingField)) (heap, text uint64, build time.Duration) {
	orig := newMappingFunc
	tb.Cleanup(func() { newMappingFunc = orig })
	newMappingFunc = func() (*mapping.IndexMappingImpl, error) {
		im, err := orig()
		if err != nil {
			return nil, err
		}
		for _, dm := range im.DefaultMapping.Properties {
			for _, fm := range dm.Fields {
				change(fm)
			}
		}
		return im, nil
	}
	return indexMemory(tb, c, Options{IndexWait: time.Hour})
}

// TestIndexHoldsNoText pins what the memory measurements decided: the index
// stores nothing (hits are read from the database), keeps no term vectors, and
// holds every text once (both languages' stems in one field).
func TestIndexHoldsNoText(t *testing.T) {
	im, err := index.NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	for _, dm := range im.DefaultMapping.Properties {
		for _, fm := range dm.Fields {
			if fm.IncludeTermVectors || fm.Store {
				t.Errorf("field %s: term vectors %v, stored %v; want neither", fm.Name, fm.IncludeTermVectors, fm.Store)
			}
		}
	}
	src := newFakeSource()
	src.Put(projA, "a", "Entscheidungen", "Datenbanken and indexing", "db")
	r := newTestRegistry(t, src, Options{})
	if got := find(t, r, projA, "datenbank index entscheidung"); len(got) != 1 || got[0].Title != "Entscheidungen" ||
		got[0].Snippet != "«Datenbanken» and «indexing»" {
		t.Fatalf("hits %+v", got)
	}
	p, err := r.project(projA)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := p.Current().Fields()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if strings.HasSuffix(f, "_de") {
			t.Errorf("index has a second language field %s (fields %v)", f, fields)
		}
	}
}

// TestRefreshSegmentsKeepNoSpareBuffer: entries written one by one (each its
// own refresh batch and segment) cost about what a built index costs per byte
// of text. zapx's buffer estimate once made each such segment keep ~100 times
// its size: 470 bytes of heap per byte of text (see index.TuneProcess). The bound is
// loose (the build measures ~8 for random words) and fails only on that.
func TestRefreshSegmentsKeepNoSpareBuffer(t *testing.T) {
	c := memCorpus{"random64k-refreshed", 16, func(rng *rand.Rand) string { return searchtest.RandomWords(rng, 64<<10) }, true}
	heap, text, _ := indexMemory(t, c, Options{})
	if ratio := float64(heap) / float64(text); ratio > 40 {
		t.Fatalf("refreshed entries hold %.0f bytes of heap per byte of text, want at most 40", ratio)
	}
}

// peakLiveHeap runs fn and returns the highest live heap (as marked by the
// last GC) seen meanwhile. A low GOGC makes collections frequent, so the
// live heap follows what fn holds closely; a sampler polls it.
func peakLiveHeap(fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	var peak atomic.Uint64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	runtime.GC()
	close(stop)
	<-stopped
	return peak.Load()
}

// TestLargeBatchPeakHeap: many large entries reach the index in one go when
// they are written at once (one refresh round) and when a project is built
// (Options.BuildBatch documents a batch). Scorch holds the analysis of a
// whole bleve batch (about 40 bytes per byte of random words) until its
// segment is built, so one batch of a round took 720–1045 MiB of live heap
// for a write key's 16 MiB hour on the hostile-load test. Batches hold at
// most Options.BatchBytes (see index/batch.go); the peak is then about what the
// finished index holds. The bound is loose: one batch measured ~78 bytes of
// peak live heap per byte of text, batches of a MiB ~17 (the index ~8).
func TestLargeBatchPeakHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("indexes 16 MiB: minutes under the race detector")
	}
	for _, build := range []bool{false, true} {
		t.Run(map[bool]string{false: "refresh", true: "build"}[build], func(t *testing.T) {
			const n = 128
			src := newFakeSource()
			rng := rand.New(rand.NewPCG(3, 4))
			var text uint64
			slugs := make([]string, n)
			for i := range slugs {
				c := searchtest.RandomWords(rng, 64<<10)
				text += uint64(len(c))
				slugs[i] = fmt.Sprintf("notes/entry-%05d", i)
				src.Put(projA, slugs[i], "Entry", c)
			}
			r := newTestRegistry(t, src, Options{IndexWait: time.Hour})
			if !build {
				// Build the index over the entries' first versions, then
				// rewrite them all at once: one refresh round.
				if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "entry"}); err != nil {
					t.Fatal(err)
				}
				for _, slug := range slugs {
					src.Put(projA, slug, "Entry", searchtest.RandomWords(rng, 64<<10))
				}
			}
			before := liveHeap()
			peak := peakLiveHeap(func() {
				for _, slug := range slugs[:n*btoi(!build)] {
					if err := r.Queue(projA, slug); err != nil {
						t.Error(err)
					}
				}
				// No test deadline: the batches take seconds, longer under -race.
				hits, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "entry"})
				if err != nil || len(hits) == 0 {
					t.Errorf("search: %d hits, %v", len(hits), err)
				}
			})
			ratio := float64(peak-min(before, peak)) / float64(text)
			t.Logf("peak live heap %d MiB over %d MiB before, %.1f bytes per byte of text", peak>>20, before>>20, ratio)
			if ratio > 30 {
				t.Fatalf("%d MiB of text peaked at %.0f bytes of live heap per byte, want at most 30", text>>20, ratio)
			}
		})
	}
}
