package rank

import (
	"math"
	"sync"
	"weak"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// Upper bounds for early termination (maxscore.go). bleve stores no maximum
// per term, so the bound of a term in a field is computed here: the largest
// √freq·norm of its postings in one segment. A segment never changes once
// written (scorch merges segments into new ones), so the bound holds as long
// as the segment lives and is computed once per (segment, field, term). It
// covers the segment's deleted postings too: a bound only has to be at least
// every live score, and so it does not depend on the snapshot.
//
// The cache is keyed by a weak pointer to the segment: it keeps no merged
// segment alive, and a new segment never meets an old one's entries (a weak
// pointer compares equal only to weak pointers of the same object). It holds
// at most boundCacheEntries entries and starts over when full, which costs
// the next recalls one walk of each of their postings lists again.
const boundCacheEntries = 1 << 16

type boundKey struct {
	seg         weak.Pointer[zap.SegmentBase]
	field, term string
}

type boundCache struct {
	mu sync.Mutex
	m  map[boundKey]float64
}

var bounds = &boundCache{m: map[boundKey]float64{}}

// termBound returns the largest √freq·norm of term in field over seg's
// postings, deleted ones included; 0 for a term seg does not hold.
func (c *boundCache) termBound(seg *zap.SegmentBase, dict segment.TermDictionary, field, term string) (float64, error) {
	key := boundKey{weak.Make(seg), field, term}
	c.mu.Lock()
	b, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := maxTermNorm(dict, term)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if len(c.m) >= boundCacheEntries {
		clear(c.m)
	}
	c.m[key] = b
	c.mu.Unlock()
	return b, nil
}

// maxTermNorm walks term's postings in dict: the largest √freq·norm,
// computed as the scorer computes its first factors (monotone in each, so
// the scorer's products never exceed the bound's).
func maxTermNorm(dict segment.TermDictionary, term string) (float64, error) {
	pl, err := dict.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return 0, err
	}
	it := pl.Iterator(true, true, false, nil)
	best := 0.0
	for {
		p, err := it.Next()
		if err != nil {
			return 0, err
		}
		if p == nil {
			return best, nil
		}
		best = max(best, math.Sqrt(float64(p.Frequency()))*p.Norm())
	}
}
