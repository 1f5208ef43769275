package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// zipfCorpus builds an index of n entries over topkWords drawn
// Zipf-distributed (the first words in most entries, the last in few),
// then replaces and forgets some entries one refresh at a time, so the
// index has several segments and deleted documents. A small vocabulary
// makes many equal scores.
func zipfCorpus(t *testing.T, rng *rand.Rand, n int) bleve.Index {
	t.Helper()
	vocab := slices.Clone(topkWords[:4+rng.IntN(len(topkWords)-4)])
	rng.Shuffle(len(vocab), func(i, j int) { vocab[i], vocab[j] = vocab[j], vocab[i] })
	zipf := rand.NewZipf(rng, 1.05+rng.Float64(), 1, uint64(len(vocab)-1))
	pick := func(lo, hi int) string {
		out := make([]string, lo+rng.IntN(hi-lo+1))
		for i := range out {
			out[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(out, " ")
	}
	entry := func(i int) (slug, title, content string, tags []string) {
		for range rng.IntN(3) {
			tags = append(tags, strings.ToLower(vocab[zipf.Uint64()]))
		}
		return fmt.Sprintf("e%d", i), pick(0, 4), pick(1, 3+rng.IntN(40)), tags
	}
	src := searchtest.NewSource()
	for i := range n {
		slug, title, content, tags := entry(i)
		src.Put(projA, slug, title, content, tags...)
	}
	p := newProject(t, src, projA)
	buildCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	_, built, err := p.Ready(buildCtx)
	cancel()
	if err != nil {
		t.Fatalf("build the index of %d entries: %v", n, err)
	}
	built()
	return churnedIndex(t, p, src, rng, 3+rng.IntN(10), func() string { return fmt.Sprintf("e%d", rng.IntN(n)) }, entry)
}

// TestPrunedTopKMatchesExhaustive compares early termination (MaxScore with
// bounds, and impact lists in three configurations, in every segment
// however small) with scoring every match: over random churned Zipf
// corpora of up to 2,500 entries (many seeds; several segments, deleted
// entries, words in title, content and tags), queries of one to four
// frequent or rare words, limits from 1 to 50, hits, order and scores must
// agree bit for bit, also with document-at-a-time reading without bounds.
// The test fails too if pruning never skipped an entry, or a way of reading
// a segment (impact tiers, impactScan, MaxScore) was never taken.
func TestPrunedTopKMatchesExhaustive(t *testing.T) {
	seeds, largest := 8, 2500
	if raceEnabled {
		seeds, largest = 3, 600
	}
	var compared int
	var scoredPruned, scoredImpacts, scoredAll, fellBack, byTiers, byScan atomic.Int64
	readCounts := [3]*atomic.Int64{&fellBack, &byTiers, &byScan}
	// Impact lists with the server's tiers; with few (a leaf soon reads
	// past them: impactScan); in a cache too small for most lists (they are
	// not kept, MaxScore reads).
	wide := newImpactCache(impactCacheBytes, impactTopMin, impactTopShare)
	narrow := newImpactCache(impactCacheBytes, 2, 64)
	small := newImpactCache(2048, 2, 64)
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 27))
		n := 1 + rng.IntN(largest)
		idx := zipfCorpus(t, rng, n)
		vocab := topkWords
		for range 40 {
			words := make([]string, 1+rng.IntN(4))
			for i := range words {
				// Both ends of the list: frequent words in most corpora,
				// rare ones or none.
				words[i] = vocab[rng.IntN(len(vocab))]
			}
			terms := text.Analyze(strings.Join(words, " "))
			if len(leavesOf(terms)) == 0 {
				continue
			}
			ctx := testCtx(t)
			for _, limit := range []int{1, 1 + rng.IntN(50), 10, 50} {
				want, ok := exactTopKMode(ctx, idx, terms, limit, topkMode{}, nil)
				if !ok {
					t.Fatalf("seed %d, %v: exhaustive scoring declined", seed, words)
				}
				// Document at a time without bounds scores every match.
				all, ok := exactTopKMode(ctx, idx, terms, limit, topkMode{prune: true, noBounds: true, visited: &scoredAll}, nil)
				if !ok || !sameMatches(all, want) {
					t.Fatalf("seed %d, %v, limit %d: document at a time without bounds differs from topkScore", seed, words, limit)
				}
				for _, m := range []struct {
					name string
					mode topkMode
				}{
					{"maxscore", topkMode{prune: true, visited: &scoredPruned}},
					{"impacts", topkMode{prune: true, impacts: true, cache: wide, visited: &scoredImpacts, readBy: readCounts}},
					{"impacts, few tiers", topkMode{prune: true, impacts: true, cache: narrow, readBy: readCounts}},
					{"impacts, small cache", topkMode{prune: true, impacts: true, cache: small, readBy: readCounts}},
				} {
					got, ok := exactTopKMode(ctx, idx, terms, limit, m.mode, nil)
					if !ok {
						t.Fatalf("seed %d, %v: %s declined", seed, words, m.name)
					}
					compared++
					if len(got) != len(want) {
						t.Fatalf("%s, seed %d (%d entries), %v, limit %d: %d hits, exhaustive %d", m.name, seed, n, words, limit, len(got), len(want))
					}
					for i := range want {
						if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
							t.Fatalf("%s, seed %d (%d entries), %v, limit %d, hit %d: %s %.17g, exhaustive %s %.17g",
								m.name, seed, n, words, limit, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
						}
					}
				}
			}
		}
	}
	t.Logf("%d compared; candidates read: %d pruned, %d by impact, %d exhaustive; segments by tiers %d, by scan %d, by MaxScore %d",
		compared, scoredPruned.Load(), scoredImpacts.Load(), scoredAll.Load(), byTiers.Load(), byScan.Load(), fellBack.Load())
	if compared < 100*seeds || scoredPruned.Load() >= scoredAll.Load() || scoredImpacts.Load() >= scoredAll.Load() {
		t.Fatalf("%d comparisons, %d (impacts %d) of %d candidates read: the corpora do not test pruning",
			compared, scoredPruned.Load(), scoredImpacts.Load(), scoredAll.Load())
	}
	if byTiers.Load() == 0 || byScan.Load() == 0 || fellBack.Load() == 0 {
		t.Fatalf("segments read by tiers %d, by scan %d, by MaxScore %d: every path must be tested", byTiers.Load(), byScan.Load(), fellBack.Load())
	}
	for _, c := range []*impactCache{wide, narrow, small} {
		if c.bytes > c.limit {
			t.Fatalf("impact cache holds %d bytes, limit %d", c.bytes, c.limit)
		}
	}
}

func sameMatches(a, b search.DocumentMatchCollection) bool {
	return slices.EqualFunc(a, b, func(x, y *search.DocumentMatch) bool { return x.ID == y.ID && x.Score == y.Score })
}

// TestPrunedTopKMatchesBleve checks the pruned path against bleve itself on
// a corpus with frequent words, as TestExactTopKMatchesBleve does for the
// default mode.
func TestPrunedTopKMatchesBleve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 27))
	idx := zipfCorpus(t, rng, 800)
	for _, q := range []string{"cache", "cache latency the", "Datenbank Entscheidung Sicherung", "deploy deployments rollout agent", "Fehler"} {
		terms := text.Analyze(q)
		for _, limit := range []int{1, 7, 50} {
			want, err := runSearch(testCtx(t), idx, projA, buildQuery(terms, nil, nil), limit)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := exactTopKMode(testCtx(t), idx, terms, limit, topkMode{prune: true}, nil)
			if !ok || len(got) != len(want) {
				t.Fatalf("%q, limit %d: %d hits (ok %v), bleve %d", q, limit, len(got), ok, len(want))
			}
			for i := range want {
				if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9*want[i].Score {
					t.Fatalf("%q, limit %d, hit %d: %s %.17g, bleve %s %.17g", q, limit, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
			}
		}
	}
}

// TestTermBound checks the bounds against the postings: in every segment,
// for every word, the bound is the largest √freq·norm of its postings (so
// no posting exceeds it and one meets it), 0 for a word the segment lacks;
// asked again it comes from the cache unchanged.
func TestTermBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 27))
	idx := zipfCorpus(t, rng, 300)
	snap := snapshotOf(t, idx)
	checked := 0
	for _, ss := range snap.Segments() {
		z := segmentBase(ss.Segment())
		for _, field := range []string{text.FieldTitle, text.FieldContent} {
			dict, err := z.Dictionary(field)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(text.Analyze(strings.Join(topkWords, " ")).ByAnalyzer[text.AnalyzerEN], "nowhereword") {
				want := 0.0
				pl, err := dict.PostingsList([]byte(w), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				it := pl.Iterator(true, true, false, nil)
				for p, err := it.Next(); p != nil || err != nil; p, err = it.Next() {
					if err != nil {
						t.Fatal(err)
					}
					want = max(want, math.Sqrt(float64(p.Frequency()))*p.Norm())
				}
				for range 2 {
					got, err := bounds.termBound(z, dict, field, w)
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("segment %d, %s:%s: bound %g, postings' largest %g", ss.Id(), field, w, got, want)
					}
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no segment checked")
	}
}

// TestBoundCacheIsBounded fills the cache past its size: it never holds
// more than boundCacheEntries, and answers stay right after it started over.
func TestBoundCacheIsBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 27))
	idx := zipfCorpus(t, rng, 50)
	snap := snapshotOf(t, idx)
	z := segmentBase(snap.Segments()[0].Segment())
	dict, err := z.Dictionary(text.FieldContent)
	if err != nil {
		t.Fatal(err)
	}
	c := &boundCache{m: map[boundKey]float64{}}
	for i := range boundCacheEntries + 10 {
		if _, err := c.termBound(z, dict, text.FieldContent, fmt.Sprint("w", i)); err != nil {
			t.Fatal(err)
		}
		if len(c.m) > boundCacheEntries {
			t.Fatalf("%d entries", len(c.m))
		}
	}
	if len(c.m) > 11 {
		t.Fatalf("%d entries after starting over, want the last few", len(c.m))
	}
}

// TestExactTopKWithScaledBoosts checks the exact tier with the boosts that
// score several projects as one (scale.go), pruned and exhaustive, against
// bleve's search of the same rewritten query, for each of two projects.
func TestExactTopKWithScaledBoosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 27))
	idxs := []bleve.Index{zipfCorpus(t, rng, 60), zipfCorpus(t, rng, 1500)}
	compared := 0
	for range 40 {
		words := make([]string, 1+rng.IntN(4))
		for i := range words {
			words[i] = topkWords[rng.IntN(len(topkWords))]
		}
		terms := text.Analyze(strings.Join(words, " "))
		leaves := leavesOf(terms)
		if len(leaves) == 0 {
			continue
		}
		stats := make([]termStats, len(idxs))
		global := termStats{df: make([]uint64, len(leaves))}
		for i, idx := range idxs {
			st, err := statsOf(testCtx(t), idx, projA, leaves)
			if err != nil {
				t.Fatal(err)
			}
			stats[i] = st
			global.docs += st.docs
			for j, n := range st.df {
				global.df[j] += n
			}
		}
		for i, idx := range idxs {
			boosts, _ := scaleFor(leaves, stats[i], global)
			for _, limit := range []int{1, 1 + rng.IntN(50)} {
				want, err := runSearch(testCtx(t), idx, projA, buildQuery(terms, nil, boosts), limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, mode := range []topkMode{{}, {prune: true}} {
					got, ok := exactTopKMode(testCtx(t), idx, terms, limit, mode, boosts)
					if !ok || len(got) != len(want) {
						t.Fatalf("%v, project %d, limit %d, prune %v: %d hits (ok %v), bleve %d", words, i, limit, mode.prune, len(got), ok, len(want))
					}
					for k := range want {
						if got[k].ID != want[k].ID || math.Abs(got[k].Score-want[k].Score) > 1e-9*want[k].Score {
							t.Fatalf("%v, project %d, limit %d, prune %v, hit %d: %s %.17g, bleve %s %.17g",
								words, i, limit, mode.prune, k, got[k].ID, got[k].Score, want[k].ID, want[k].Score)
						}
					}
					compared++
				}
			}
		}
	}
	if compared < 100 {
		t.Fatalf("%d comparisons", compared)
	}
}

// TestImpactListsConcurrently recalls from many goroutines through one
// impact cache that starts empty and is too small for every list (it starts
// over while others read): each answer must be the exhaustive one.
func TestImpactListsConcurrently(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 27))
	idx := zipfCorpus(t, rng, 1200)
	var queries []text.Terms
	var want []search.DocumentMatchCollection
	for q := range 24 {
		terms := text.Analyze(strings.Join([]string{topkWords[q%len(topkWords)], topkWords[(q*7)%len(topkWords)]}, " "))
		w, ok := exactTopKMode(testCtx(t), idx, terms, 10, topkMode{}, nil)
		if !ok {
			t.Fatal("exhaustive scoring declined")
		}
		queries, want = append(queries, terms), append(want, w)
	}
	var byImpact atomic.Int64
	// Room for the lists of the segments a merge may replace while the
	// test runs: a replaced segment's lists stay until the collector frees
	// it, and a cache full of them reads nothing by impact (a full cache is
	// TestImpactCacheIsBounded's).
	cache := newImpactCache(1<<20, 2, 8)
	mode := topkMode{prune: true, impacts: true, cache: cache, readBy: [3]*atomic.Int64{nil, &byImpact, &byImpact}}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 60 {
				q := (g + i) % len(queries)
				got, ok := exactTopKMode(testCtx(t), idx, queries[q], 10, mode, nil)
				if !ok || !sameMatches(got, want[q]) {
					errs <- fmt.Sprintf("goroutine %d, query %d: differs from exhaustive (ok %v)", g, q, ok)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if byImpact.Load() == 0 {
		t.Fatal("no segment read by impact")
	}
}
