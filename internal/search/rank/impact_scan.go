package rank

import (
	"context"
	"math"
)

// impactScan continues impactSegment when a leaf must read past the tiers
// its list keeps: MaxScore, as maxScoreSegment does it, but over the impact
// lists in doc order instead of zapx's postings, and only over the entries
// not read yet. Each leaf's bound is its frontier's value (what an unread
// entry can take there; 0 when all its postings were read); the leaves
// whose bounds together stay below the threshold are non-essential, and
// candidates come from the others' postings at or below their frontiers.
// A candidate whose bound reaches the threshold is looked up in every list:
// skipped if some leaf read it already (its value there is above the
// frontier) or it is deleted, scored by combine() otherwise.
func impactScan(ctx context.Context, order []*topkField, leaves []msLeaf, lists []*impactList, frontier []uint16, nFields int,
	offset uint64, deleted deletions, best []topkHit, limit int) (_ []topkHit, visited int, _ error) {
	for i := range leaves {
		l := &leaves[i]
		l.bound = 0 // what an entry not read yet can take
		if frontier[i] > 0 {
			l.bound = lists[i].table[frontier[i]-1] * l.idf * l.qw
		}
		l.scan = scanCursor{l: lists[i], limit: frontier[i], pos: -1}
		l.scan.next()
	}
	p := newPartition(order, leaves, nFields)
	p.update(best, limit)

	for step := 1; ; step++ {
		if step%4096 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		d := uint64(math.MaxUint64)
		for _, l := range p.byBound[p.essential:] {
			if c := &l.scan; !c.done && uint64(c.doc) < d {
				d = uint64(c.doc)
			}
		}
		if d == math.MaxUint64 {
			return best, visited, nil
		}
		doc := uint32(d)
		for _, l := range p.byBound[:p.essential] {
			l.inc, l.val = l.bound > 0, l.bound
		}
		for _, l := range p.byBound[p.essential:] {
			l.inc = !l.scan.done && l.scan.doc == doc
			if l.inc {
				l.val = l.scan.l.table[l.scan.v-1] * l.idf * l.qw
			}
		}
		if !below(combine(order, leaves, nFields), p.theta) && (deleted == nil || !deleted.Contains(doc)) {
			visited++
			if h, fresh := scoreEntry(leaves, lists, frontier, -1, doc, order, nFields); fresh {
				h.doc += offset
				best = pushHit(best, h, limit)
				p.update(best, limit)
			}
		}
		for _, l := range p.byBound[p.essential:] {
			if c := &l.scan; !c.done && c.doc == doc {
				c.next()
			}
		}
	}
}

// scanCursor reads an impact list's postings in doc order, those with a
// value index up to limit.
type scanCursor struct {
	l     *impactList
	limit uint16
	pos   int // in docs, or the doc number when the list is dense
	doc   uint32
	v     uint16
	done  bool
}

func (c *scanCursor) next() {
	l := c.l
	for c.pos++; c.pos < l.positions(); c.pos++ {
		v := l.valueAtPos(c.pos)
		if v == 0 || v > c.limit {
			continue
		}
		c.v, c.doc = v, uint32(c.pos)
		if !l.dense {
			c.doc = l.docs[c.pos]
		}
		return
	}
	c.done = true
}
