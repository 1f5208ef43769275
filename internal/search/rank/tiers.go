package rank

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// Tiers. A recall ranks in up to three tiers, each a search of its own
// appended to the one before:
//
//  0. entries matching a query word as written (or a form of it): the recall
//     as it always was; corrections of misspelled words add to their score
//     (weighted by typoWeight), so "replicaton latency" lists the entries on
//     replication latency first among those on latency;
//  1. entries matching only a compound's parts or a compound of query words
//     (a compound of two query words is searched right after tier 0 and
//     listed among its entries, before those meeting one query word only:
//     join_rank.go);
//  2. entries matching only a correction of a misspelled word.
//
// A tier is searched only while the ones before it left the limit unfilled,
// so they listed every entry they match, and it drops those entries from its
// own list: a part match never outranks a whole-word match and a typo match
// never outranks either, by construction, whatever the scores (a join,
// which stands for two whole words, outranks the matches of one). (Dropping
// them from the list is cheaper than excluding them in the query, which
// would walk the postings of every common query word once more.) A lower tier's scores are scaled to at most the last score
// above it, so scores fall along the list. A query without expansions is
// searched exactly as before, scores included.
const (
	compoundWeight = 0.5
	typoWeight     = 0.3
)

// altFields are the fields a compound part or a correction is searched in:
// the title and the content. Each more field is one more term search per
// term of every part, and a part search is a conjunction over the entries
// holding common words; slug and tag words are nearly always in the title or
// content too.
var altFields = fieldBoosts[:0:0]

func init() {
	for _, fb := range fieldBoosts {
		if fb.field == text.FieldTitle || fb.field == text.FieldContent {
			altFields = append(altFields, fb)
		}
	}
}

// pass is one tier's search.
type pass struct {
	tier  int
	terms text.Terms
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
		return append(leavesOf(p.terms), altLeaves(p.typos())...)
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
	if p.tier == 0 && len(p.exp.typos) == 0 {
		return buildQuery(p.terms, tags, boosts)
	}
	switch p.tier {
	case 0:
		bq := bleve.NewBooleanQuery()
		bq.AddMust(exactQuery(p.terms, bs))
		bq.AddShould(altsQuery(bs, p.typos()))
		return withTags(bq, tags)
	case 1:
		return withTags(altsQuery(bs, p.compounds()), tags)
	default:
		return withTags(altsQuery(bs, p.typos()), tags)
	}
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
				for _, fb := range altFields {
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
				for _, fb := range altFields {
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

// Match is one of bleve's matches and the project whose index found it.
type Match struct {
	Ref memory.ProjectRef
	DM  *search.DocumentMatch
	// Alts are the alternatives of the tier that found the match when it
	// was not tier 0 (the words as written): it holds one of them at least
	// (explain.go). Nil for a tier-0 match.
	Alts []Alt
}

// Query is a validated, analyzed recall as the ranking needs it: its terms,
// the tags every hit must carry, and how many hits to find.
type Query struct {
	Terms text.Terms
	Tags  []string
	Limit int
}

// Options turn the expansions off: NoCompounds and NoTypos leave out the
// compound and typo tiers (compound.go, typos.go), so a recall finds the
// query's words and their forms only, as before they existed.
type Options struct {
	NoCompounds, NoTypos bool
}

// Tiers runs the recall's tiers over idxs (one index, or several
// scored as one: scale.go) and returns the best q.Limit matches in order.
// Corrections are looked for before tier 0 (they add to its scores), and
// only for words no searched entry uses: one or two lookups per word.
// Splits are computed only when tier 0 leaves the limit unfilled, so a
// recall whose words fill it pays nothing for them; joins of neighbouring
// words are looked up once tier 0 found something, for a query of two words
// or more (join_rank.go). refs names the project of each index.
func Tiers(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, q Query, opts Options) ([]Match, error) {
	v := newVocab(ctx, idxs)
	defer v.close()
	var exp expansion
	if !opts.NoTypos {
		exp.typos = typos(q.Terms.Seq, v)
	}
	var out []Match
	type hitID struct {
		ref  memory.ProjectRef
		slug string
	}
	listed := map[hitID]bool{}
	for tier := 0; tier < 3 && len(out) < q.Limit; tier++ {
		if tier == 1 && !opts.NoCompounds {
			exp.compounds = compounds(q.Terms.Seq, v)
		}
		if v.err != nil {
			return nil, memory.Internal(fmt.Errorf("search: read dictionaries: %w", v.err))
		}
		p := pass{tier: tier, terms: q.Terms, exp: exp}
		if p.empty() {
			continue
		}
		// The tiers before listed fewer than q.Limit entries, all they
		// match; of q.Limit entries this tier finds, at least the missing
		// ones are new.
		var (
			found []Match
			err   error
		)
		if len(idxs) == 1 {
			// The common case, tier 0 without corrections or tags, is
			// scored without bleve's searcher tree (topk.go).
			dms, ok := search.DocumentMatchCollection(nil), false
			if tier == 0 && len(exp.typos) == 0 && len(q.Tags) == 0 {
				dms, ok = exactTopK(ctx, idxs[0], q.Terms, q.Limit)
			}
			if !ok {
				if dms, err = runSearch(ctx, idxs[0], refs[0], p.query(q.Tags, nil), q.Limit); err != nil {
					return nil, err
				}
			}
			for _, dm := range dms {
				found = append(found, Match{Ref: refs[0], DM: dm})
			}
		} else if found, err = searchScaled(ctx, refs, idxs, p, q.Tags, q.Limit); err != nil {
			return nil, err
		}
		var ms []Match
		alts := p.alts()
		for _, m := range found {
			if id := (hitID{m.Ref, m.DM.ID}); !listed[id] && len(out)+len(ms) < q.Limit {
				listed[id] = true
				m.Alts = alts
				ms = append(ms, m)
			}
		}
		out = appendBelow(out, ms)
		if tier == 0 && !opts.NoCompounds {
			// A compound of two query words ranks with the entries
			// meeting two words (join_rank.go).
			var added []Match
			if out, added, err = promoteJoins(ctx, refs, idxs, q, out, v); err != nil {
				return nil, err
			}
			for _, m := range added {
				listed[hitID{m.Ref, m.DM.ID}] = true
			}
		}
	}
	return out, nil
}
