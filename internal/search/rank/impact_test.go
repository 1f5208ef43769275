package rank

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

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
	adv, err := idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var dense, sparse int
	for _, ss := range rd.(*scorch.IndexSnapshot).Segments() {
		z := segmentBase(ss.Segment())
		for _, field := range []string{text.FieldTitle, text.FieldContent, text.FieldKeys} {
			dict, err := z.Dictionary(field)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(text.Analyze(strings.Join(topkWords, " ")).ByAnalyzer[text.AnalyzerEN], "nowhereword") {
				want := 1 + rng.IntN(40)
				l, err := buildImpactList(dict, w, z.Count(), want, 1000)
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
