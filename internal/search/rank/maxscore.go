package rank

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"

	"munin/internal/search/text"
)

// Early termination (MaxScore). topkScore scores every entry a query word
// matches; common words match a large share of a project, so its cost grows
// with the project. prunedTopK computes the same best limit, scores and
// order included, reading the postings document at a time, segment by
// segment, and skips every entry whose score cannot reach the current
// limit-th best:
//
//   - each term query (a leaf: a term in a field) has an upper bound per
//     segment, its largest √freq·norm there (bounds.go) times its idf and
//     query weight; an entry's score is at most the sum of its leaves'
//     scores, since the disjunctions' coordination factors are at most 1;
//   - the leaves ordered by bound, the longest prefix whose bounds sum below
//     the threshold is "non-essential": an entry matching only those cannot
//     enter, so candidates come from the other leaves' postings alone; a
//     non-essential leaf is only advanced to a candidate, highest bound
//     first, while the candidate can still reach the threshold;
//   - a candidate that survives is scored with the same operations in the
//     same order as topkScore (fields and terms in bleve's order), so its
//     score is bit for bit the same, and enters the same heap.
//
// Pruning needs a bound strictly below the threshold: an entry scoring
// exactly the threshold still enters on a lower doc number (the heap's
// order is score, then doc number, whatever order entries come in, and
// impact lists are read out of doc order), and a margin of pruneMargin
// guards against the rounding of sums taken in another order than the
// score's. TestPrunedTopKMatchesExhaustive compares it with topkScore.
//
// With impacts on, segments of minDocs documents or more are read from impact lists
// (impact.go, impact_topk.go) when every leaf has one there; this reads
// them otherwise (a list with too many distinct values, or larger than its
// cache). It declines (the caller scores exhaustively) for a segment type
// other than zapx v17's, whose postings it does not know. Segments smaller than
// topkMode.minDocs are read without bounds: all their leaves are essential
// (each entry is scored, as topkScore would), which spares the cache the
// many small segments that scorch soon merges away. An index without a
// segment that large is scored by topkScore: reading term at a time is
// faster than document at a time when nothing is skipped (a 1,000-entry
// project: about half the CPU).
const pruneMargin = 1e-9

// topkMode chooses how exactTopK scores: prune turns early termination on,
// for segments of at least minDocs documents.
type topkMode struct {
	prune    bool
	minDocs  uint64
	impacts  bool          // segments of minDocs read from impact lists (impact_topk.go)
	noBounds bool          // document at a time without bounds (tests)
	visited  *atomic.Int64 // when not nil, counts the candidates read (tests)
	// Tests: a cache of their own (nil: impacts), and when not nil the
	// segments of minDocs read each way.
	cache  *impactCache
	readBy [3]*atomic.Int64 // by readBy
}

// Impact lists are off: in the load test's curve at 1,000,000 entries
// (200 frequent words in turn) they cut the server's CPU per recall only
// from 4.6 to 4.2 ms and raised its RSS from 323 to 864 MiB (2026-12-04).
var defaultTopK = topkMode{prune: true, minDocs: 4096}

// withImpacts is defaultTopK reading large segments from impact lists.
var withImpacts = topkMode{prune: true, minDocs: 4096, impacts: true}

// msLeaf is one leaf's postings in one segment and its position there.
type msLeaf struct {
	it      segment.PostingsIterator
	idf, qw float64
	bound   float64 // upper bound of score() in the segment
	cur     uint64  // doc number (in the segment) of the current posting
	freq    uint64
	norm    float64
	done    bool
	inc     bool       // combine's: counts for the entry at hand
	val     float64    // with this score or bound
	scan    scanCursor // impactScan's
}

func (l *msLeaf) set(p segment.Posting, err error) error {
	if err != nil {
		return err
	}
	if p == nil {
		l.done = true
		return nil
	}
	l.cur, l.freq, l.norm = p.Number(), p.Frequency(), p.Norm()
	return nil
}

func (l *msLeaf) next() error { return l.set(l.it.Next()) }

// advanceTo moves l to its first posting at or after d and tells whether
// that is d.
func (l *msLeaf) advanceTo(d uint64) (bool, error) {
	if !l.done && l.cur < d {
		if err := l.set(l.it.Advance(d)); err != nil {
			return false, err
		}
	}
	return l.at(d), nil
}

func (l *msLeaf) at(d uint64) bool { return !l.done && l.cur == d }

// score is topkScore's addend, operation for operation.
func (l *msLeaf) score() float64 { return math.Sqrt(float64(l.freq)) * l.norm * l.idf * l.qw }

// below tells whether an upper bound ub cannot reach the threshold theta.
func below(ub, theta float64) bool { return ub*(1+pruneMargin) < theta }

// prunedTopK returns the best limit matches of the query over snap's
// segments as topkScore would; ok is false when it declines.
func prunedTopK(ctx context.Context, snap *scorch.IndexSnapshot, docs uint64, terms text.Terms, limit int, mode topkMode, boosts []float64) ([]topkHit, bool) {
	segs := snap.Segments()
	zsegs := make([]*zap.SegmentBase, len(segs))
	for i, ss := range segs {
		z := segmentBase(ss.Segment())
		if z == nil {
			return nil, false
		}
		zsegs[i] = z
	}
	fields, ok := postingsFields(segs, docs, terms, boosts)
	if !ok {
		return nil, false
	}
	order, queryNorm := scoringOrder(fields)

	best := make([]topkHit, 0, limit)
	var offset uint64
	for si, z := range zsegs {
		var visited int
		var err error
		read := declined
		if mode.impacts && !mode.noBounds && z.Count() >= mode.minDocs {
			var deleted deletions
			if d := segs[si].Deleted(); d != nil {
				deleted = d
			}
			best, visited, read, err = segmentImpacts(ctx, mode.impactCache(), order, si, z, deleted, queryNorm, len(fields), offset, best, limit)
			if err != nil {
				return nil, false
			}
			mode.count(read)
		}
		if read == declined {
			leaves, err := segmentLeaves(order, si, z, queryNorm, mode)
			if err != nil {
				return nil, false
			}
			if best, visited, err = maxScoreSegment(ctx, order, leaves, len(fields), offset, best, limit); err != nil {
				return nil, false
			}
		}
		if mode.visited != nil {
			mode.visited.Add(int64(visited))
		}
		offset += z.Count()
	}
	slices.SortFunc(best, func(a, b topkHit) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	return best, true
}

// segmentLeaves opens the leaves' postings in segment si, in scoring order,
// with their bounds (+Inf below mode.minDocs or without pruning).
func segmentLeaves(order []*topkField, si int, z *zap.SegmentBase, queryNorm float64, mode topkMode) ([]msLeaf, error) {
	usesBounds := mode.prune && !mode.noBounds && z.Count() >= mode.minDocs
	var leaves []msLeaf
	for _, f := range order {
		for _, t := range f.terms {
			l := msLeaf{idf: t.idf, qw: t.boost * t.idf * queryNorm, bound: math.Inf(1)}
			pl := t.pls[si]
			if pl.Count() == 0 {
				l.done, l.bound = true, 0
				leaves = append(leaves, l)
				continue
			}
			if usesBounds {
				tn, err := bounds.termBound(z, f.dicts[si], f.name, t.term)
				if err != nil {
					return nil, err
				}
				l.bound = tn * l.idf * l.qw
			}
			l.it = pl.Iterator(true, true, false, nil)
			if err := l.next(); err != nil {
				return nil, err
			}
			leaves = append(leaves, l)
		}
	}
	return leaves, nil
}

// maxScoreSegment adds the segment's entries that belong among the best
// limit to best (a heap, worst at its root); offset turns the segment's doc
// numbers into the snapshot's. leaves are in scoring order, nFields counts
// every field of the query (those without terms too).
func maxScoreSegment(ctx context.Context, order []*topkField, leaves []msLeaf, nFields int, offset uint64, best []topkHit, limit int) (_ []topkHit, visited int, _ error) {
	bound := func() float64 { return combine(order, leaves, nFields) }
	p := newPartition(order, leaves, nFields)
	p.update(best, limit)

	for ; ; visited++ {
		if visited%4096 == 4095 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		d := uint64(math.MaxUint64)
		for _, l := range p.byBound[p.essential:] {
			if !l.done && l.cur < d {
				d = l.cur
			}
		}
		if d == math.MaxUint64 {
			return best, visited, nil
		}
		// The candidate's bound: its essential leaves' scores, the
		// non-essential ones' bounds until they are read.
		for _, l := range p.byBound[p.essential:] {
			l.inc = l.at(d)
			if l.inc {
				l.val = l.score()
			}
		}
		for _, l := range p.byBound[:p.essential] {
			l.inc, l.val = true, l.bound
		}
		survives := !below(bound(), p.theta)
		for j := p.essential - 1; survives && j >= 0; j-- {
			l := p.byBound[j]
			at, err := l.advanceTo(d)
			if err != nil {
				return nil, 0, err
			}
			l.inc = at
			if at {
				l.val = l.score()
			}
			survives = !below(bound(), p.theta)
		}
		if survives {
			// Every leaf is read now: bound() is the score.
			best = pushHit(best, topkHit{doc: offset + d, score: bound()}, limit)
			p.update(best, limit)
		}
		for _, l := range p.byBound[p.essential:] {
			if l.at(d) {
				if err := l.next(); err != nil {
					return nil, 0, err
				}
			}
		}
	}
}

// partition is MaxScore's split of the leaves at the threshold theta, the
// worst of the best hits once there are limit of them: in byBound (the
// leaves by ascending bound) those before essential are non-essential, an
// entry matching only them scores below theta.
type partition struct {
	order     []*topkField
	leaves    []msLeaf
	nFields   int
	byBound   []*msLeaf
	essential int
	theta     float64
}

func newPartition(order []*topkField, leaves []msLeaf, nFields int) *partition {
	p := &partition{order: order, leaves: leaves, nFields: nFields, byBound: make([]*msLeaf, len(leaves)), theta: math.Inf(-1)}
	for i := range leaves {
		p.byBound[i] = &leaves[i]
	}
	slices.SortStableFunc(p.byBound, func(a, b *msLeaf) int { return cmp.Compare(a.bound, b.bound) })
	return p
}

// update raises theta to the worst of best and moves the split: the
// longest prefix of byBound whose bounds combined stay below theta is
// non-essential. A leaf of bound 0 cannot match.
func (p *partition) update(best []topkHit, limit int) {
	if len(best) < limit {
		return
	}
	p.theta = best[0].score
	for ; p.essential < len(p.byBound); p.essential++ {
		for i := range p.leaves {
			p.leaves[i].inc, p.leaves[i].val = false, p.leaves[i].bound
		}
		for _, l := range p.byBound[:p.essential+1] {
			l.inc = l.bound > 0
		}
		if !below(combine(p.order, p.leaves, p.nFields), p.theta) {
			return
		}
	}
}

// combine is topkScore's score of the leaves marked inc with values val:
// each field's values summed in order and scaled by the share of its terms
// included, the fields summed in order and scaled likewise. With each
// matching leaf's score it is the entry's score, operation for operation;
// with bounds in place of some scores it bounds the score of every entry
// matching no more leaves than those marked, as sums and products of
// non-negative numbers never fall when an operand grows, rounding included.
func combine(order []*topkField, leaves []msLeaf, nFields int) float64 {
	total, matchedFields, i := 0.0, 0, 0
	for _, f := range order {
		sum, matched := 0.0, 0
		for range f.terms {
			if l := &leaves[i]; l.inc {
				sum += l.val
				matched++
			}
			i++
		}
		if matched > 0 {
			total += sum * (float64(matched) / float64(len(f.terms)))
			matchedFields++
		}
	}
	return total * (float64(matchedFields) / float64(nFields))
}

// segmentBase is the zapx v17 segment of s, nil for another type: a
// segment still in memory is a SegmentBase, one written to disk a Segment
// around one.
func segmentBase(s segment.Segment) *zap.SegmentBase {
	switch z := s.(type) {
	case *zap.Segment:
		return &z.SegmentBase
	case *zap.SegmentBase:
		return z
	}
	return nil
}
