package rank

import (
	"math"
	"slices"
	"sync"
	"weak"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// Impact lists: a term's postings in one segment, held decoded and ordered
// by impact, for impactSegment (impact_topk.go). MaxScore (maxscore.go)
// skips scoring, not reading: zapx decodes the frequency and norm of every
// posting its iterator passes, and Advance walks the postings bitmap one
// entry at a time, so even a skip costs a walk of the list. A frequent term
// in a large segment is all reading. Per-block bounds aligned with zapx's
// chunks would not help: its chunks hold about 1,024 postings each, and the
// few highest scores of a frequent word (say, three times in a three-word
// title) occur in nearly every chunk; and any read of a posting behind a
// skipped chunk still walks the bitmap there.
//
// So the list keeps √freq·norm — what the scorer multiplies by idf and the
// query weight, the same float64 — for every posting, as an index into the
// list's distinct values (one or two bytes a posting), by doc number (an
// array over the segment's documents when the term is in many of them,
// sorted doc numbers otherwise, indexed by runs of doc numbers so that a
// lookup searches about 16), and the doc numbers of its highest values in
// descending order of value ("tiers", whole ones: at least
// 1/impactTopShare of the postings and impactTopMin, or all). Deleted
// postings are kept (the caller skips them), so the list does not depend
// on the snapshot. About 5.5 bytes a posting, or one byte a document of the
// segment when the term is in a fifth of them or more; the 20 most frequent
// words of BenchmarkExactTopK's Zipf corpus take 36 MiB at 1,000,000
// entries.
//
// A segment never changes once written, so a list is built once, with one
// walk of the postings, and cached by a weak pointer to the segment as the
// bounds are (bounds.go). The cache holds at most impactCacheBytes by the
// lists' sizes (see impactCache.list for what happens when it is full). A
// list with more than 65,535 distinct values is not kept either: the
// segment is then read with MaxScore.
const (
	impactCacheBytes = 64 << 20
	impactTopShare   = 16 // the tiers hold at least 1/16 of the postings
	impactTopMin     = 1024
	impactSearchRun  = 16 // postings per run of a sparse list's index
)

// impactList is one term's postings in one field of one segment.
type impactList struct {
	n     int       // postings, deleted ones included
	table []float64 // distinct √freq·norm ascending; value index v is table[v-1]
	// By doc number: v8/v16 over all documents when dense; else docs and
	// v8/v16 per posting.
	dense bool
	docs  []uint32
	// Sparse: docs[from[b]:from[b+1]] are the postings of docs b<<shift to
	// (b+1)<<shift-1, about impactSearchRun of them, so a lookup's binary
	// search is short.
	from  []uint32
	shift uint
	v8    []uint8
	v16   []uint16
	// The highest values: top's doc numbers, tier by tier (descending value,
	// ascending doc number within a tier); tiers[i] ends at ends[i] in top.
	top   []uint32
	tiers []uint16
	ends  []uint32
	rest  uint16 // the value index of the highest posting not in top, 0 if none
}

// valueAt is the value index of doc d's posting, 0 for none.
func (l *impactList) valueAt(d uint32) uint16 {
	i := int(d)
	if !l.dense {
		var found bool
		b := int(d >> l.shift)
		if b+1 >= len(l.from) {
			return 0
		}
		lo := int(l.from[b])
		if i, found = slices.BinarySearch(l.docs[lo:l.from[b+1]], d); !found {
			return 0
		}
		i += lo
	} else if i >= l.positions() {
		return 0
	}
	return l.valueAtPos(i)
}

// positions counts the values kept: per document when dense, per posting
// otherwise.
func (l *impactList) positions() int { return max(len(l.v8), len(l.v16)) }

func (l *impactList) valueAtPos(i int) uint16 {
	if l.v8 != nil {
		return uint16(l.v8[i])
	}
	return l.v16[i]
}

// size is the list's size for the cache's budget (a nil list is kept too:
// it says the term has too many distinct values).
func (l *impactList) size() int {
	if l == nil {
		return 128
	}
	return 128 + 8*len(l.table) + 4*len(l.docs) + 4*len(l.from) + len(l.v8) + 2*len(l.v16) + 4*len(l.top) + 6*len(l.tiers)
}

// buildImpactList walks the postings of pl (all of a term's in a segment
// of numDocs documents, deleted ones included); nil when they have too many
// distinct values.
func buildImpactList(pl segment.PostingsList, numDocs uint64, topMin, topShare int) (*impactList, error) {
	var docs []uint32
	var tns []float64
	it := pl.Iterator(true, true, false, nil)
	for {
		p, err := it.Next()
		if err != nil {
			return nil, err
		}
		if p == nil {
			break
		}
		if p.Number() >= numDocs || numDocs > math.MaxUint32 {
			return nil, nil // not a segment this list can describe
		}
		docs = append(docs, uint32(p.Number()))
		// As msLeaf.score computes its first two factors.
		tns = append(tns, math.Sqrt(float64(p.Frequency()))*p.Norm())
	}
	table := slices.Clone(tns)
	slices.Sort(table)
	table = slices.Compact(table)
	if len(table) > math.MaxUint16 {
		return nil, nil
	}
	l := &impactList{n: len(docs), table: table}
	vals := make([]uint16, len(docs))
	for i, tn := range tns {
		v, _ := slices.BinarySearch(table, tn)
		vals[i] = uint16(v + 1)
	}
	width := 2
	if len(table) < math.MaxUint8 {
		width = 1
	}
	l.dense = uint64(len(docs))*uint64(4+width) >= numDocs*uint64(width)
	if l.dense {
		byDoc := make([]uint16, numDocs)
		for i, d := range docs {
			byDoc[d] = vals[i]
		}
		l.setValues(byDoc, width)
	} else {
		l.docs = docs
		l.setSearchRuns(numDocs)
		l.setValues(vals, width)
	}
	l.setTiers(docs, vals, max(topMin, l.n/topShare))
	return l, nil
}

// setSearchRuns indexes the sparse docs by runs of doc numbers.
func (l *impactList) setSearchRuns(numDocs uint64) {
	for l.shift < 32 && numDocs>>l.shift > uint64(len(l.docs)/impactSearchRun) {
		l.shift++
	}
	l.from = make([]uint32, numDocs>>l.shift+2)
	b := 0
	for i, d := range l.docs {
		for ; b <= int(d>>l.shift); b++ {
			l.from[b] = uint32(i)
		}
	}
	for ; b < len(l.from); b++ {
		l.from[b] = uint32(len(l.docs))
	}
}

func (l *impactList) setValues(vals []uint16, width int) {
	if width == 2 {
		l.v16 = vals
		return
	}
	l.v8 = make([]uint8, len(vals))
	for i, v := range vals {
		l.v8[i] = uint8(v)
	}
}

// setTiers keeps the doc numbers of the highest values, whole tiers, until
// they hold want postings.
func (l *impactList) setTiers(docs []uint32, vals []uint16, want int) {
	perValue := make([]int, len(l.table)+1)
	for _, v := range vals {
		perValue[v]++
	}
	kept := 0
	v := len(l.table)
	for ; v > 0 && kept < want; v-- {
		kept += perValue[v]
		if perValue[v] > 0 {
			l.tiers = append(l.tiers, uint16(v))
			l.ends = append(l.ends, uint32(kept))
		}
	}
	for v > 0 && perValue[v] == 0 {
		v--
	}
	l.rest = uint16(v)
	// Counting sort: each kept value's tier from its start, doc numbers
	// ascending within it as docs are.
	next := make([]uint32, len(l.table)+1)
	start := uint32(0)
	for i, tv := range l.tiers {
		next[tv] = start
		start = l.ends[i]
	}
	l.top = make([]uint32, kept)
	for i, d := range docs {
		if v := vals[i]; v > l.rest {
			l.top[next[v]] = d
			next[v]++
		}
	}
}

type impactKey struct {
	seg         weak.Pointer[zap.SegmentBase]
	field, term string
}

type impactCache struct {
	mu    sync.Mutex
	m     map[impactKey]*impactList
	bytes int
	limit int
	// The tiers keep at least topMin postings or 1/topShare of them.
	topMin, topShare int
}

func newImpactCache(limit, topMin, topShare int) *impactCache {
	return &impactCache{m: map[impactKey]*impactList{}, limit: limit, topMin: topMin, topShare: topShare}
}

var impacts = newImpactCache(impactCacheBytes, impactTopMin, impactTopShare)

// list returns term's impact list in field of seg, building it on first
// use; nil (ok) when it has too many distinct values or does not fit in
// the cache. A full cache first forgets the lists of segments that are
// gone; it never drops a live one for a new one: with more words asked in
// turn than it holds, that would rebuild a list at every recall (a walk of
// its postings, dearer than MaxScore's reading), so the words that do not
// fit are read with MaxScore, unbuilt.
func (c *impactCache) list(seg *zap.SegmentBase, dict segment.TermDictionary, field, term string) (*impactList, error) {
	key := impactKey{weak.Make(seg), field, term}
	c.mu.Lock()
	l, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return l, nil
	}
	pl, err := dict.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return nil, err
	}
	if !c.room(impactSizeOf(pl.Count(), seg.Count(), c.topMin, c.topShare)) {
		return nil, nil
	}
	l, err = buildImpactList(pl, seg.Count(), c.topMin, c.topShare)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && c.bytes+l.size() <= c.limit {
		c.m[key] = l
		c.bytes += l.size()
	}
	return l, nil
}

// room tells whether size more bytes fit, after forgetting the lists of
// gone segments if they do not.
func (c *impactCache) room(size int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > c.limit {
		c.dropMerged()
	}
	return c.bytes+size <= c.limit
}

// impactSizeOf estimates the size of a list of n postings in a segment of
// numDocs documents, with one byte a value (as most lists: a few hundred
// distinct values at most) and tiers of about the share asked (whole tiers
// can hold more). list checks the size built.
func impactSizeOf(n, numDocs uint64, topMin, topShare int) int {
	values := n * 21 / 4 // a doc number and a value, the search runs' index
	if n*5 >= numDocs {
		values = numDocs
	}
	return 128 + 16*256 + int(values) + 4*min(int(n), max(topMin, int(n)/topShare))
}

// dropMerged forgets the lists of segments that are gone (merged away and
// collected); c.mu is held.
func (c *impactCache) dropMerged() {
	for k, l := range c.m {
		if k.seg.Value() == nil {
			delete(c.m, k)
			c.bytes -= l.size()
		}
	}
}
