package rank

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"munin/internal/search/text"
)

// Tier 0 of a recall without corrections or tags (over one project, or
// over each of several with rescaled boosts: scale.go) is
// exactQuery: a disjunction over the weighted fields of disjunctions of term
// queries. bleve scores it through its generic searcher tree, a
// DocumentMatch per term and per field for every matching entry merged
// twice (about 430 ns per entry, and common words match a fifth of a
// project). exactTopK computes the same scores in one pass over the terms'
// postings and keeps only the best limit.
//
// Equivalence with bleve v2.6.3 (TestExactTopKMatchesBleve compares them):
//   - a term scores tf·norm·idf · boost·idf·queryNorm with tf = √freq and
//     idf = 1 + ln(docs/(docFreq+1)) (scorer.TermQueryScorer, tf-idf);
//   - queryNorm = 1/√Σ(boost·idf)² over every term of the query (the root
//     searcher's norm, which it sets on every leaf);
//   - a disjunction scores the sum of its matching children times
//     matched/children; a field without terms is a MatchNone child that
//     counts among the children. Children are summed in the order bleve's
//     searcher sorts them (sort.Sort by Count), so even the rounding agrees;
//   - the collector orders by score, ties by internal doc number.
//
// Whatever this does not cover (BM25, synonyms, nested documents, another
// index type, a field with more terms than searcher.DisjunctionHeapTakeover,
// whose heap searcher sums in another order, or any error) makes it decline,
// and the caller searches with bleve.

// topkTerm is one term query: its postings and its scorer's numbers.
type topkTerm struct {
	term  string                 // prunedTopK's
	pls   []segment.PostingsList // per segment
	count uint64                 // docFreq, the searcher's Count
	boost float64
	idf   float64
}

// topkField is one field's disjunction; no terms is a MatchNone child.
type topkField struct {
	name  string
	dicts []segment.TermDictionary // per segment, prunedTopK's
	terms []*topkTerm
	count uint64 // the disjunction searcher's Count: its terms' sum
}

// byCount orders like searcher.OrderedSearcherList: same Less, same
// sort.Sort, hence the same permutation.
type byCount[T any] struct {
	s     []T
	count func(T) uint64
}

func (b byCount[T]) Len() int           { return len(b.s) }
func (b byCount[T]) Less(i, j int) bool { return b.count(b.s[i]) < b.count(b.s[j]) }
func (b byCount[T]) Swap(i, j int)      { b.s[i], b.s[j] = b.s[j], b.s[i] }

// topkAcc is an entry's running score.
type topkAcc struct {
	field   float64 // sum of the current field's term scores
	total   float64 // sum of the finished fields' scores
	nTerms  int32
	nFields int32
}

// topkScratch is exactTopK's memory, kept between recalls in topkPool:
// the per-entry sums (24 bytes an entry, indexed by doc number) and the
// lists of entries with a score.
type topkScratch struct {
	acc     []topkAcc
	touched []uint32 // entries with a score, in order of first match
	inField []uint32 // entries the current field matched
}

var topkPool = sync.Pool{New: func() any { return new(topkScratch) }}

// topkHit is a scored entry by internal doc number.
type topkHit struct {
	doc   uint64
	score float64
}

// before is the collector's order: score descending, then doc number.
func (a topkHit) before(b topkHit) bool {
	return a.score > b.score || (a.score == b.score && a.doc < b.doc)
}

// exactTopK returns the best limit matches of buildQuery(terms, nil, nil)
// in idx as bleve's search would, scores included; ok is false when it
// cannot promise that and the caller must ask bleve.
func exactTopK(ctx context.Context, idx bleve.Index, terms text.Terms, limit int) (dms search.DocumentMatchCollection, ok bool) {
	return exactTopKMode(ctx, idx, terms, limit, defaultTopK, nil)
}

// exactTopKMode is exactTopK with early termination on or off (maxscore.go)
// and, when boosts is not nil, the boosts of buildQuery(terms, nil, boosts):
// one for each of leavesOf(terms), in order (scale.go).
func exactTopKMode(ctx context.Context, idx bleve.Index, terms text.Terms, limit int, mode topkMode, boosts []float64) (dms search.DocumentMatchCollection, ok bool) {
	if boosts != nil && len(boosts) != len(leavesOf(terms)) {
		return nil, false
	}
	if limit <= 0 || ctx.Err() != nil {
		return nil, false
	}
	switch m := idx.Mapping().(type) {
	case *mapping.IndexMappingImpl:
		if m.ScoringModel == index.BM25Scoring || m.SynonymCount() > 0 || m.CountNested() > 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	adv, err := idx.Advanced()
	if err != nil {
		return nil, false
	}
	rd, err := adv.Reader()
	if err != nil {
		return nil, false
	}
	defer rd.Close()
	snap, isScorch := rd.(*scorch.IndexSnapshot)
	if !isScorch {
		return nil, false // doc numbers below are scorch's
	}
	var maxDoc uint64 // scorch numbers a snapshot's entries, deleted ones too
	for _, ss := range snap.Segments() {
		maxDoc += ss.Segment().Count()
	}
	docs, err := rd.DocCount()
	if err != nil {
		return nil, false
	}

	var largest uint64
	for _, ss := range snap.Segments() {
		largest = max(largest, ss.Segment().Count())
	}
	if mode.prune && (mode.noBounds || largest >= mode.minDocs) {
		if best, ok := prunedTopK(ctx, snap, docs, terms, limit, mode, boosts); ok {
			return matchesOf(rd, best)
		}
		if ctx.Err() != nil {
			return nil, false
		}
	}
	fields, ok := postingsFields(snap.Segments(), docs, terms, boosts)
	if !ok {
		return nil, false
	}
	best, ok := topkScore(ctx, fields, snap.Segments(), maxDoc, limit)
	if !ok {
		return nil, false
	}
	return matchesOf(rd, best)
}

// postingsFields opens the query's term queries over segs: per field its
// dictionary in each segment (once, not once per term as a term searcher
// opens them), per term its postings list in each segment, deletions
// excepted, whose counts summed are the term searcher's Count. ok is false
// when it cannot (the caller asks bleve).
func postingsFields(segs []*scorch.SegmentSnapshot, docs uint64, terms text.Terms, boosts []float64) ([]*topkField, bool) {
	fields := make([]*topkField, 0, len(fieldBoosts))
	bs := &booster{boosts: boosts}
	for _, fb := range fieldBoosts {
		f := &topkField{name: fb.field}
		fields = append(fields, f)
		words := terms.ByAnalyzer[fb.analyzer]
		if len(words) > searcher.DisjunctionHeapTakeover {
			return nil, false
		}
		if len(words) == 0 {
			continue
		}
		f.dicts = make([]segment.TermDictionary, len(segs))
		for i, ss := range segs {
			d, err := ss.Segment().Dictionary(fb.field)
			if err != nil {
				return nil, false
			}
			f.dicts[i] = d
		}
		for _, w := range words {
			t := &topkTerm{term: w, boost: bs.next(fb.boost), pls: make([]segment.PostingsList, len(segs))}
			for i, ss := range segs {
				pl, err := f.dicts[i].PostingsList([]byte(w), ss.Deleted(), nil)
				if err != nil {
					return nil, false
				}
				t.pls[i] = pl
				t.count += pl.Count()
			}
			t.idf = 1.0 + math.Log(float64(docs)/float64(t.count+1.0))
			f.terms = append(f.terms, t)
			f.count += t.count
		}
	}
	return fields, true
}

// matchesOf makes bleve's matches of hits, as its collector would.
func matchesOf(rd index.IndexReader, best []topkHit) (search.DocumentMatchCollection, bool) {
	dms := make(search.DocumentMatchCollection, 0, len(best))
	for _, h := range best {
		iid := index.NewIndexInternalID(nil, h.doc)
		id, err := rd.ExternalID(iid)
		if err != nil {
			return nil, false
		}
		dms = append(dms, &search.DocumentMatch{ID: id, IndexInternalID: iid, Score: h.score})
	}
	return dms, true
}

// topkScore reads the fields' postings and returns the best limit entries,
// best first. It reads term at a time, fields and terms in the order
// bleve's disjunctions sum them, so each entry's sums take their addends in
// bleve's order; a term's postings segment by segment, numbered as scorch
// numbers a snapshot's documents (a segment's after all of the segments
// before it, deleted ones included), as its term searcher reads them.
func topkScore(ctx context.Context, fields []*topkField, segs []*scorch.SegmentSnapshot, maxDoc uint64, limit int) ([]topkHit, bool) {
	if maxDoc > math.MaxUint32 {
		return nil, false
	}
	order, queryNorm := scoringOrder(fields)

	sc := topkPool.Get().(*topkScratch)
	if uint64(len(sc.acc)) < maxDoc {
		sc.acc = make([]topkAcc, maxDoc)
	}
	acc, touched, inField := sc.acc, sc.touched[:0], sc.inField[:0]
	for _, f := range order {
		if len(f.terms) == 0 {
			continue
		}
		inField = inField[:0]
		for _, t := range f.terms {
			queryWeight := t.boost * t.idf * queryNorm
			var offset uint64
			for si, pl := range t.pls {
				if pl.Count() == 0 {
					offset += segs[si].Segment().Count()
					continue
				}
				it := pl.Iterator(true, true, false, nil)
				for {
					p, err := it.Next()
					if err != nil {
						return nil, false
					}
					if p == nil {
						break
					}
					n := offset + p.Number()
					if n >= maxDoc {
						return nil, false
					}
					a := &acc[n]
					if a.nTerms == 0 {
						inField = append(inField, uint32(n))
					}
					a.field += math.Sqrt(float64(p.Frequency())) * p.Norm() * t.idf * queryWeight
					a.nTerms++
				}
				offset += segs[si].Segment().Count()
			}
		}
		for _, n := range inField {
			a := &acc[n]
			if a.nFields == 0 {
				touched = append(touched, n)
			}
			a.total += a.field * (float64(a.nTerms) / float64(len(f.terms)))
			a.nFields++
			a.field, a.nTerms = 0, 0
		}
		if ctx.Err() != nil {
			return nil, false
		}
	}

	// The best limit in a heap whose root is the worst of them.
	best := make([]topkHit, 0, min(limit, len(touched)))
	for _, n := range touched {
		best = pushHit(best, topkHit{doc: uint64(n), score: acc[n].total * (float64(acc[n].nFields) / float64(len(fields)))}, limit)
		acc[n] = topkAcc{}
	}
	// Clean again: every entry with a score was touched.
	sc.touched, sc.inField = touched, inField
	topkPool.Put(sc)
	slices.SortFunc(best, func(a, b topkHit) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	return best, true
}

// scoringOrder sorts fields and their terms as bleve's searchers do (it
// sorts fields' terms in place) and returns them with the query norm.
func scoringOrder(fields []*topkField) ([]*topkField, float64) {
	order := slices.Clone(fields)
	sort.Sort(byCount[*topkField]{order, func(f *topkField) uint64 { return f.count }})
	weights := 0.0
	for _, f := range order {
		sort.Sort(byCount[*topkTerm]{f.terms, func(t *topkTerm) uint64 { return t.count }})
		w := 0.0
		for _, t := range f.terms {
			bi := t.boost * t.idf
			w += bi * bi
		}
		weights += w
	}
	return order, 1.0 / math.Sqrt(weights)
}

// pushHit adds h to best (a heap of at most limit, the worst at its root)
// if it belongs among them.
func pushHit(best []topkHit, h topkHit, limit int) []topkHit {
	if len(best) < limit {
		best = append(best, h)
		heapUp(best, len(best)-1)
	} else if h.before(best[0]) {
		best[0] = h
		heapDown(best, 0)
	}
	return best
}

// heapUp and heapDown keep h a heap with the worst hit at its root.
func heapUp(h []topkHit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[p].before(h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func heapDown(h []topkHit, i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[w].before(h[l]) {
			w = l
		}
		if r < len(h) && h[w].before(h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[w], h[i] = h[i], h[w]
		i = w
	}
}
