package search

import (
	"context"
	"math"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"munin/internal/memory"
)

// Tiers. A recall ranks in up to three tiers, each a search of its own
// appended to the one before:
//
//  0. entries matching a query word as written (or a form of it): the recall
//     as it always was; compound parts and corrections only add to their
//     score (weighted by compoundWeight and typoWeight);
//  1. entries matching only a compound's parts or a compound of query words;
//  2. entries matching only a correction of a misspelled word.
//
// A tier is searched only while the ones before it left the limit unfilled,
// and it excludes their entries, so a part match never outranks a whole-word
// match and a typo match never outranks either: by construction, whatever
// the scores. A lower tier's scores are scaled to at most the last score
// above it, so scores fall along the list. A query without expansions is
// searched exactly as before, scores included.
const (
	compoundWeight = 0.5
	typoWeight     = 0.3
)

// pass is one tier's search.
type pass struct {
	tier  int
	terms queryTerms
	exp   expansion
}

// empty tells whether the pass has nothing to search.
func (p pass) empty() bool {
	switch p.tier {
	case 0:
		return len(leavesOf(p.terms)) == 0
	case 1:
		return len(p.exp.compounds) == 0
	default:
		return len(p.exp.typos) == 0
	}
}

// leaves lists the pass's scoring term queries in the order query builds
// them (what scale.go rescales); the excluded tiers' terms do not score.
func (p pass) leaves() []leaf {
	switch p.tier {
	case 0:
		return append(leavesOf(p.terms), altLeaves(p.compounds(), p.typos())...)
	case 1:
		return altLeaves(p.compounds())
	default:
		return altLeaves(p.typos())
	}
}

// query builds the pass's query; boosts, when not nil, replace the boosts of
// leaves() in order.
func (p pass) query(tags []string, boosts []float64) query.Query {
	bs := &booster{boosts: boosts}
	if p.tier == 0 && p.exp.empty() {
		return buildQuery(p.terms, tags, boosts)
	}
	bq := bleve.NewBooleanQuery()
	switch p.tier {
	case 0:
		bq.AddMust(exactQuery(p.terms, bs))
		bq.AddShould(altsQuery(bs, p.compounds(), p.typos()))
	case 1:
		bq.AddMust(altsQuery(bs, p.compounds()))
		bq.AddMustNot(exactQuery(p.terms, &booster{}))
	default:
		bq.AddMust(altsQuery(bs, p.typos()))
		bq.AddMustNot(exactQuery(p.terms, &booster{}))
		if len(p.exp.compounds) > 0 {
			bq.AddMustNot(altsQuery(&booster{}, p.compounds()))
		}
	}
	return withTags(bq, tags)
}

func (p pass) compounds() weighted { return weighted{p.exp.compounds, compoundWeight} }
func (p pass) typos() weighted     { return weighted{p.exp.typos, typoWeight} }

// booster hands out the replacement boosts of a query's leaves in order.
type booster struct {
	boosts []float64
	i      int
}

func (b *booster) next(def float64) float64 {
	if b.boosts == nil {
		return def
	}
	b.i++
	return b.boosts[b.i-1]
}

// weighted is a list of alternatives and the weight of their leaves.
type weighted struct {
	alts   []alt
	weight float64
}

// altLeaves lists the term queries altsQuery makes for groups, in order.
func altLeaves(groups ...weighted) []leaf {
	var out []leaf
	for _, g := range groups {
		for _, a := range g.alts {
			for _, part := range a.parts {
				for _, fb := range fieldBoosts {
					for _, t := range part {
						out = append(out, leaf{field: fb.field, term: t, boost: fb.boost * g.weight})
					}
				}
			}
		}
	}
	return out
}

// altsQuery matches any alternative of groups: every part of it, each part
// by any of its terms in any field.
func altsQuery(bs *booster, groups ...weighted) query.Query {
	dq := bleve.NewDisjunctionQuery()
	dq.SetMin(1)
	for _, g := range groups {
		for _, a := range g.alts {
			parts := make([]query.Query, 0, len(a.parts))
			for _, part := range a.parts {
				pd := bleve.NewDisjunctionQuery()
				pd.SetMin(1)
				for _, fb := range fieldBoosts {
					for _, t := range part {
						tq := bleve.NewTermQuery(t)
						tq.SetField(fb.field)
						tq.SetBoost(bs.next(fb.boost * g.weight))
						pd.AddQuery(tq)
					}
				}
				parts = append(parts, pd)
			}
			if len(parts) == 1 {
				dq.AddQuery(parts[0])
			} else {
				dq.AddQuery(bleve.NewConjunctionQuery(parts...))
			}
		}
	}
	return dq
}

// expand computes the recall's expansion against the dictionaries of idxs,
// unless the options turn it off.
func (r *Registry) expand(ctx context.Context, idxs []bleve.Index, rc recall) (expansion, error) {
	if (r.opts.NoCompounds && r.opts.NoTypos) || len(rc.terms.seq) == 0 {
		return expansion{}, nil
	}
	v, ok, err := openVocab(ctx, idxs)
	if err != nil || !ok {
		return expansion{}, err
	}
	defer v.close()
	var x expansion
	if !r.opts.NoCompounds {
		x.compounds = compounds(rc.terms.seq, v)
	}
	if !r.opts.NoTypos {
		x.typos = typos(rc.terms.seq, v)
	}
	return x, nil
}

// searchTiers runs the recall's tiers over idxs (one index, or several
// scored as one: scale.go) and returns the best rc.limit matches in order.
func (r *Registry) searchTiers(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, rc recall) ([]match, error) {
	exp, err := r.expand(ctx, idxs, rc)
	if err != nil {
		return nil, memory.Internal(err)
	}
	var out []match
	for tier := 0; tier < 3 && len(out) < rc.limit; tier++ {
		p := pass{tier: tier, terms: rc.terms, exp: exp}
		if p.empty() {
			continue
		}
		var ms []match
		if len(idxs) == 1 {
			dms, err := runSearch(ctx, idxs[0], refs[0], p.query(rc.tags, nil), rc.limit-len(out))
			if err != nil {
				return nil, err
			}
			for _, dm := range dms {
				ms = append(ms, match{ref: refs[0], dm: dm})
			}
		} else if ms, err = searchScaled(ctx, refs, idxs, p, rc.tags, rc.limit-len(out)); err != nil {
			return nil, err
		}
		if len(out) > 0 && len(ms) > 0 {
			last, top := out[len(out)-1].dm.Score, ms[0].dm.Score
			if top > last {
				f := last / top
				for _, m := range ms {
					m.dm.Score = math.Min(m.dm.Score*f, last)
				}
			}
		}
		out = append(out, ms...)
	}
	return out, nil
}
