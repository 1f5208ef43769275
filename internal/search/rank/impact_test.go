package rank

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"weak"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"

	"munin/internal/search/text"
)

// TestImpactList checks lists against the postings they come from, in
// every segment of a churned corpus, dense and sparse, one and two bytes a
// value: each posting's value is its √freq·norm, no other document has one;
// the tiers hold every posting above rest, by descending value and
// ascending doc number, at least as many as asked or all.
func TestImpactList(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 27))
	idx := zipfCorpus(t, rng, 900)
	snap := snapshotOf(t, idx)
	var dense, sparse int
	for _, ss := range snap.Segments() {
		z := segmentBase(ss.Segment())
		for _, field := range []string{text.FieldTitle, text.FieldContent, text.FieldKeys} {
			dict, err := z.Dictionary(field)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(text.Analyze(strings.Join(topkWords, " ")).ByAnalyzer[text.AnalyzerEN], "nowhereword") {
				want := 1 + rng.IntN(40)
				pl, err := dict.PostingsList([]byte(w), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				l, err := buildImpactList(pl, z.Count(), want, 1000)
				if err != nil || l == nil {
					t.Fatalf("%s:%s: list %v, %v", field, w, l, err)
				}
				if l.dense {
					dense++
				} else {
					sparse++
				}
				postings := postingsOf(t, dict, w)
				checkImpactList(t, l, z.Count(), want, postings)
				if l.v8 != nil { // the same list two bytes a value
					wide := *l
					wide.v8, wide.v16 = nil, make([]uint16, len(l.v8))
					for i, v := range l.v8 {
						wide.v16[i] = uint16(v)
					}
					checkImpactList(t, &wide, z.Count(), want, postings)
				}
			}
		}
	}
	if dense == 0 || sparse == 0 {
		t.Fatalf("%d dense, %d sparse lists: both must be checked", dense, sparse)
	}
}

// postingsOf is word's √freq·norm by doc number in dict, deleted postings
// included.
func postingsOf(t *testing.T, dict segment.TermDictionary, w string) map[uint32]float64 {
	t.Helper()
	pl, err := dict.PostingsList([]byte(w), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]float64{}
	it := pl.Iterator(true, true, false, nil)
	for p, err := it.Next(); p != nil || err != nil; p, err = it.Next() {
		if err != nil {
			t.Fatal(err)
		}
		out[uint32(p.Number())] = math.Sqrt(float64(p.Frequency())) * p.Norm()
	}
	return out
}

func checkImpactList(t *testing.T, l *impactList, numDocs uint64, want int, postings map[uint32]float64) {
	t.Helper()
	for d := range uint32(numDocs) {
		v := l.valueAt(d)
		tn, ok := postings[d]
		if ok != (v > 0) || ok && l.table[v-1] != tn {
			t.Fatalf("doc %d: value index %d, posting %v %g", d, v, ok, tn)
		}
	}
	above := 0
	for _, tn := range postings {
		if l.rest == 0 || tn > l.table[l.rest-1] {
			above++
		}
	}
	if len(l.top) != above || above < min(want, len(postings)) {
		t.Fatalf("%d kept, %d above rest, %d asked, %d postings", len(l.top), above, want, len(postings))
	}
	for i := 1; i < len(l.top); i++ {
		a, b := l.valueAt(l.top[i-1]), l.valueAt(l.top[i])
		if a < b || a == b && l.top[i-1] >= l.top[i] {
			t.Fatalf("top %d, %d: values %d, %d", l.top[i-1], l.top[i], a, b)
		}
	}
	for i, tv := range l.tiers {
		if e := l.ends[i]; e == 0 || l.valueAt(l.top[e-1]) != tv {
			t.Fatalf("tier %d (value %d) ends at %d", i, tv, e)
		}
	}
}

// TestImpactCacheIsBounded fills a small cache with real lists: it never
// holds more than its limit (a list that does not fit is declined), and
// lists of segments that are gone are forgotten to make room.
func TestImpactCacheIsBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 27))
	idx := zipfCorpus(t, rng, 400)
	snap := snapshotOf(t, idx)
	z := segmentBase(snap.Segments()[0].Segment())
	dict, err := z.Dictionary(text.FieldContent)
	if err != nil {
		t.Fatal(err)
	}
	words := text.Analyze(strings.Join(topkWords, " ")).ByAnalyzer[text.AnalyzerEN]
	c := newImpactCache(16<<10, 2, 8)
	kept, declined := 0, 0
	for range 3 {
		for _, w := range words {
			l, err := c.list(z, dict, text.FieldContent, w)
			if err != nil {
				t.Fatal(err)
			}
			if l != nil {
				kept++
			} else {
				declined++
			}
			if c.bytes > c.limit || c.bytes != sizeOf(c) {
				t.Fatalf("%d bytes counted, %d held, limit %d", c.bytes, sizeOf(c), c.limit)
			}
		}
	}
	if kept == 0 || declined == 0 {
		t.Fatalf("%d lists kept, %d declined: the cache must fill", kept, declined)
	}

	// A segment that is gone: its lists go first.
	c = newImpactCache(1<<20, 2, 8)
	func() {
		gone := new(zap.SegmentBase)
		c.m[impactKey{weak.Make(gone), "f", "t"}] = nil
		c.bytes += (*impactList)(nil).size()
	}()
	if _, err := c.list(z, dict, text.FieldContent, words[0]); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	c.mu.Lock()
	c.dropMerged()
	c.mu.Unlock()
	if len(c.m) != 1 || c.bytes != sizeOf(c) {
		t.Fatalf("%d lists, %d bytes counted, %d held: the gone segment's list stayed", len(c.m), c.bytes, sizeOf(c))
	}
}

func sizeOf(c *impactCache) int {
	n := 0
	for _, l := range c.m {
		n += l.size()
	}
	return n
}
