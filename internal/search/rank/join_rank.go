package rank

import (
	"context"
	"math"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// Joins above one-word matches. "Kosten der Speicherung" means the
// Speicherkosten: an entry holding that compound meets both words of the
// query, while an entry that says only "Kosten" meets one. Tier 0 lists the
// second and, ranked strictly above tier 1, would bury the first (and fill
// the limit with entries holding a common word, so that tier 1 is never
// searched). So when the query's neighbouring words join into a known
// compound (joins), the entries holding it are searched right after tier 0
// and listed after the tier-0 entries that meet two query words or more,
// before those that meet only one: a join counts as the two words it
// joins. Entries holding the query's words as written keep their order
// among themselves; the join's entries carry the join as their Alts.
//
// The cost, for a query of two words or more whose tier 0 found something:
// the join lookups (at most maxJoinPairs pairs × 2 orders × 5 bases × 7
// linking elements, all cached for tier 1), and, only when a join is known,
// one search for its entries and one over the listed entries (by id) for
// those meeting two words.

// promoteJoins reorders the tier-0 list out as above and returns it with
// the join's new entries (at most limit in all) and them alone.
func promoteJoins(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, q Query, out []Match, v *vocab) ([]Match, []Match, error) {
	words := distinctWords(pairWords(q.Terms.Seq))
	if len(out) == 0 || len(words) < 2 {
		return out, nil, nil
	}
	js := joins(q.Terms.Seq, v)
	if len(js) == 0 {
		return out, nil, nil
	}
	p := pass{tier: 1, terms: q.Terms, exp: expansion{compounds: js}}
	found, err := searchPass(ctx, refs, idxs, p, q.Tags, q.Limit)
	if err != nil {
		return nil, nil, err
	}
	type hitID struct {
		ref  memory.ProjectRef
		slug string
	}
	listed := map[hitID]bool{}
	for _, m := range out {
		listed[hitID{m.Ref, m.DM.ID}] = true
	}
	holds := map[hitID]bool{} // listed entries holding the compound
	var added []Match
	alts := exported(js)
	for _, m := range found {
		id := hitID{m.Ref, m.DM.ID}
		if listed[id] {
			holds[id] = true
			continue
		}
		m.Alts = alts
		added = append(added, m)
	}
	if len(added) == 0 {
		return out, nil, nil
	}
	two, err := meetingTwo(ctx, refs, idxs, out, words)
	if err != nil {
		return nil, nil, err
	}
	var strong, weak []Match
	for _, m := range out {
		if id := (hitID{m.Ref, m.DM.ID}); holds[id] || two[m.Ref][m.DM.ID] {
			strong = append(strong, m)
		} else {
			weak = append(weak, m)
		}
	}
	res := appendBelow(strong, added)
	res = appendBelow(res, weak)
	res = res[:min(len(res), q.Limit)]
	var kept []Match
	for _, m := range res {
		if m.Alts != nil {
			kept = append(kept, m)
		}
	}
	return res, kept, nil
}

// distinctWords are words without repeats of the same word.
func distinctWords(words []text.Word) []text.Word {
	var out []text.Word
	seen := map[string]bool{}
	for _, w := range words {
		if !seen[w.Lower] && len(w.Stems) > 0 {
			seen[w.Lower] = true
			out = append(out, w)
		}
	}
	return out
}

// meetingTwo returns, per project, the ids of the entries of ms that hold
// two of words or more (each by any of its stems in any weighted field):
// one search per project, over those entries only.
func meetingTwo(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, ms []Match, words []text.Word) (map[memory.ProjectRef]map[string]bool, error) {
	out := map[memory.ProjectRef]map[string]bool{}
	for i, idx := range idxs {
		var ids []string
		for _, m := range ms {
			if m.Ref == refs[i] {
				ids = append(ids, m.DM.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		any := bleve.NewDisjunctionQuery()
		any.SetMin(2)
		for _, w := range words {
			wq := bleve.NewDisjunctionQuery()
			wq.SetMin(1)
			for _, fb := range fieldBoosts {
				for _, s := range w.Stems {
					tq := bleve.NewTermQuery(s)
					tq.SetField(fb.field)
					wq.AddQuery(tq)
				}
			}
			any.AddQuery(wq)
		}
		dms, err := runSearch(ctx, idx, refs[i], bleve.NewConjunctionQuery(query.Query(bleve.NewDocIDQuery(ids)), any), len(ids))
		if err != nil {
			return nil, err
		}
		for _, dm := range dms {
			if out[refs[i]] == nil {
				out[refs[i]] = map[string]bool{}
			}
			out[refs[i]][dm.ID] = true
		}
	}
	return out, nil
}

// searchPass runs p over idxs: one index as it is, several scored as one
// (scale.go).
func searchPass(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, p pass, tags []string, limit int) ([]Match, error) {
	if len(idxs) != 1 {
		return searchScaled(ctx, refs, idxs, p, tags, limit)
	}
	dms, err := runSearch(ctx, idxs[0], refs[0], p.query(tags, nil), limit)
	if err != nil {
		return nil, err
	}
	out := make([]Match, len(dms))
	for i, dm := range dms {
		out[i] = Match{Ref: refs[0], DM: dm}
	}
	return out, nil
}

// appendBelow appends ms to out, their scores scaled so that none is above
// the last of out: scores fall along the list.
func appendBelow(out, ms []Match) []Match {
	if len(out) > 0 && len(ms) > 0 {
		last, top := out[len(out)-1].DM.Score, ms[0].DM.Score
		if top > last {
			f := last / top
			for _, m := range ms {
				m.DM.Score = math.Min(m.DM.Score*f, last)
			}
		}
	}
	return append(out, ms...)
}
