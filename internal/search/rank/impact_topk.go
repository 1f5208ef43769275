package rank

import (
	"context"
	"math"

	zap "github.com/blevesearch/zapx/v17"
)

// impactSegment is prunedTopK's reading of a large segment from impact
// lists (impact.go) instead of zapx's postings: it scores entries in
// descending order of what they can reach (a threshold algorithm), not by
// doc number, so a frequent word costs its few best entries rather than a
// walk of its postings.
//
// Each leaf has a frontier, the highest value among its postings not read
// yet; its postings above the frontier have been read, each with its
// entry's full score (every other leaf's value looked up by doc number).
// An entry not read yet matches each leaf at most at its frontier, so it
// scores at most combine() of the frontiers (a leaf whose postings were all
// read cannot match it). Step by step the leaf with the highest frontier
// (times its idf and query weight) reads its next tier — every posting of
// that value — until the heap is full and that bound is below its worst
// score (strictly, with pruneMargin, as in maxScoreSegment: an entry read
// later may have the lower doc number and win a tie). The hits that enter
// are those of scoring every entry, as the heap keeps the best limit by
// score and doc number whatever order they come in.
//
// Scores are topkScore's bit for bit: a value is the posting's
// √freq·norm, kept as a float64, times idf times query weight, combined by
// combine(). When a leaf must read past the tiers its list keeps,
// impactScan reads the rest.
func impactSegment(ctx context.Context, order []*topkField, leaves []msLeaf, lists []*impactList, nFields int,
	offset uint64, deleted deletions, best []topkHit, limit int) (_ []topkHit, visited int, _ readBy, _ error) {
	tier := make([]int, len(leaves))        // each leaf's next tier
	frontier := make([]uint16, len(leaves)) // its value index, 0 when all is read
	for i, l := range lists {
		frontier[i] = l.frontierAt(0)
	}
	for {
		// The bound of every entry not read yet, and the leaf to read.
		next, high := -1, math.Inf(-1)
		for i := range leaves {
			l := &leaves[i]
			l.inc = frontier[i] > 0
			if l.inc {
				l.val = lists[i].table[frontier[i]-1] * l.idf * l.qw
				if l.val > high {
					next, high = i, l.val
				}
			}
		}
		if next < 0 || len(best) == limit && below(combine(order, leaves, nFields), best[0].score) {
			return best, visited, readByTiers, nil
		}
		list := lists[next]
		t := tier[next]
		if t == len(list.tiers) { // the rest of its postings is in no tier
			best, scanned, err := impactScan(ctx, order, leaves, lists, frontier, nFields, offset, deleted, best, limit)
			return best, visited + scanned, readByScan, err
		}
		start := uint32(0)
		if t > 0 {
			start = list.ends[t-1]
		}
		for _, d := range list.top[start:list.ends[t]] {
			if deleted != nil && deleted.Contains(d) {
				continue
			}
			visited++
			if visited%4096 == 0 && ctx.Err() != nil {
				return nil, 0, declined, ctx.Err()
			}
			if h, fresh := scoreEntry(leaves, lists, frontier, next, d, order, nFields); fresh {
				h.doc += offset
				best = pushHit(best, h, limit)
			}
		}
		tier[next]++
		frontier[next] = list.frontierAt(tier[next])
	}
}

// deletions is a segment's deleted documents, nil for none (a nil
// *roaring.Bitmap must not be passed as one).
type deletions interface{ Contains(uint32) bool }

// frontierAt is the highest value index from tier t on: the tier's, or the
// first one not kept, 0 after the last posting.
func (l *impactList) frontierAt(t int) uint16 {
	if t < len(l.tiers) {
		return l.tiers[t]
	}
	return l.rest
}

// scoreEntry scores doc d of leaf reading's current tier; fresh is false
// when another leaf read it before (its value there is above that leaf's
// frontier).
func scoreEntry(leaves []msLeaf, lists []*impactList, frontier []uint16, reading int, d uint32, order []*topkField, nFields int) (topkHit, bool) {
	for i := range leaves {
		l := &leaves[i]
		v := lists[i].valueAt(d)
		if i != reading && v > frontier[i] {
			return topkHit{}, false
		}
		l.inc = v > 0
		if l.inc {
			l.val = lists[i].table[v-1] * l.idf * l.qw
		}
	}
	return topkHit{doc: uint64(d), score: combine(order, leaves, nFields)}, true
}

// readBy tells how segmentImpacts read a segment.
type readBy int

const (
	declined    readBy = iota // not at all: MaxScore reads it from zapx
	readByTiers               // from the lists' tiers alone
	readByScan                // past their tiers (impactScan)
)

// segmentImpacts reads segment si with impactSegment when every leaf has an
// impact list there.
func segmentImpacts(ctx context.Context, cache *impactCache, order []*topkField, si int, z *zap.SegmentBase, deleted deletions,
	queryNorm float64, nFields int, offset uint64, best []topkHit, limit int) (_ []topkHit, visited int, _ readBy, _ error) {
	var leaves []msLeaf
	var lists []*impactList
	for _, f := range order {
		for _, t := range f.terms {
			l, err := cache.list(z, f.dicts[si], f.name, t.term)
			if err != nil || l == nil {
				return best, 0, declined, err
			}
			leaves = append(leaves, msLeaf{idf: t.idf, qw: t.boost * t.idf * queryNorm})
			lists = append(lists, l)
		}
	}
	return impactSegment(ctx, order, leaves, lists, nFields, offset, deleted, best, limit)
}

func (m topkMode) impactCache() *impactCache {
	if m.cache != nil {
		return m.cache
	}
	return impacts
}

func (m topkMode) count(how readBy) {
	if c := m.readBy[how]; c != nil {
		c.Add(1)
	}
}
