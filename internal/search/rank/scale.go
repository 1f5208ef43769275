package rank

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// Scores across projects. The mapping sets no scoring model, so bleve scores
// with TF-IDF: a term query (one leaf of the query, a term in one field)
// weighs idf = 1 + ln(N/(df+1)), N the index's documents and df those whose
// field holds the term, and idf counts twice (in the term's score and in its
// query weight); every leaf is scaled by the query norm 1/√Σ(boost·idf)².
// N and df are the index's own, so one word weighs differently in each
// project: a word rare in a big project (idf 9.5 in 10,000 entries) outweighs
// a strong match in a small project where half the entries hold it (idf 1.5).
// Merging per-project scores would rank by project size, not by match.
//
// bleve's own answer does not fit. An index alias (MultiSearch) merges the
// indexes' own scores, which is the problem above. Its global scoring
// (search.SearchTypeKey = GlobalScoring, a pre-search over all indexes)
// applies only to BM25, which would change every single-project ranking,
// and even there it sums only the document counts and field lengths: each
// term searcher still takes df from its own index (reader.Count() in
// searcher/search_term.go), so the idf mixes global N with local df.
// Instead, SearchProjects reads N and every leaf's df in each index, sums
// them, and rewrites each index's query so that bleve computes the score
// the union of the projects would give: a leaf's boost b becomes b·g²/l² (g
// the global idf, l the local one), and each hit's score is multiplied by
// the ratio of the two query norms. TestSearchProjectsScoresAsOneIndex
// checks the result against one index holding both projects' entries.
//
// The statistics are read from the index before the search, which opens its
// own snapshot; a refresh applied in between moves a df by the few entries
// it changed, and the scores of that recall by as little.

// leaf is one term query of a recall: a term in a field, with its boost.
type leaf struct {
	field, term string
	boost       float64
}

// leavesOf lists the recall's term queries in the order buildQuery makes them.
func leavesOf(terms text.Terms) []leaf {
	var out []leaf
	for _, fb := range fieldBoosts {
		for _, w := range terms.ByAnalyzer[fb.analyzer] {
			out = append(out, leaf{field: fb.field, term: w, boost: fb.boost})
		}
	}
	return out
}

// termStats are what TF-IDF reads of an index: its documents and, per leaf,
// how many of them hold the leaf's term in its field.
type termStats struct {
	docs uint64
	df   []uint64
}

// statsOf reads the statistics of leaves from idx, as bleve's term searcher
// reads them (DocCount and the term field reader's Count).
func statsOf(ctx context.Context, idx bleve.Index, ref memory.ProjectRef, leaves []leaf) (termStats, error) {
	fail := func(err error) (termStats, error) {
		return termStats{}, memory.Internal(fmt.Errorf("search %s: read statistics: %w", ref, err))
	}
	adv, err := idx.Advanced()
	if err != nil {
		return fail(err)
	}
	rd, err := adv.Reader()
	if err != nil {
		return fail(err)
	}
	defer rd.Close()
	st := termStats{df: make([]uint64, len(leaves))}
	if st.docs, err = rd.DocCount(); err != nil {
		return fail(err)
	}
	for i, l := range leaves {
		tfr, err := rd.TermFieldReader(ctx, []byte(l.term), l.field, false, false, false)
		if err != nil {
			return fail(err)
		}
		st.df[i] = tfr.Count()
		if err := tfr.Close(); err != nil {
			return fail(err)
		}
	}
	return st, nil
}

// idf is bleve's TF-IDF inverse document frequency (scorer_term.go).
func idf(docs, df uint64) float64 { return 1 + math.Log(float64(docs)/float64(df+1)) }

// scaleFor returns the boosts that make bleve score an index with the local
// statistics as if it had the global ones, and the factor its scores need for
// the query norm. local.docs is not 0 (an empty index is not searched).
func scaleFor(leaves []leaf, local, global termStats) ([]float64, float64) {
	boosts := make([]float64, len(leaves))
	var localNorm, globalNorm float64
	for i, l := range leaves {
		li, gi := idf(local.docs, local.df[i]), idf(global.docs, global.df[i])
		boosts[i] = l.boost * gi * gi / (li * li)
		localNorm += (boosts[i] * li) * (boosts[i] * li)
		globalNorm += (l.boost * gi) * (l.boost * gi)
	}
	if globalNorm == 0 {
		return boosts, 1
	}
	return boosts, math.Sqrt(localNorm / globalNorm)
}

// searchScaled runs one tier's pass over every index with the global
// statistics of all of them and returns the best limit matches, best first;
// equal scores keep the order of refs.
func searchScaled(ctx context.Context, refs []memory.ProjectRef, idxs []bleve.Index, p pass, tags []string, limit int) ([]Match, error) {
	leaves := p.leaves()
	if len(leaves) == 0 {
		return nil, nil // no searchable word: Search finds nothing either
	}
	stats := make([]termStats, len(idxs))
	global := termStats{df: make([]uint64, len(leaves))}
	for i, idx := range idxs {
		st, err := statsOf(ctx, idx, refs[i], leaves)
		if err != nil {
			return nil, err
		}
		stats[i] = st
		global.docs += st.docs
		for j, n := range st.df {
			global.df[j] += n
		}
	}
	var ms []Match
	for i, idx := range idxs {
		if stats[i].docs == 0 {
			continue
		}
		boosts, factor := scaleFor(leaves, stats[i], global)
		// The common case is scored without bleve's searcher tree, with
		// the same boosts (topk.go).
		dms, ok := search.DocumentMatchCollection(nil), false
		if p.tier == 0 && len(p.exp.typos) == 0 && len(tags) == 0 {
			dms, ok = exactTopKMode(ctx, idx, p.terms, limit, defaultTopK, boosts)
		}
		if !ok {
			var err error
			if dms, err = runSearch(ctx, idx, refs[i], p.query(tags, boosts), limit); err != nil {
				return nil, err
			}
		}
		for _, dm := range dms {
			dm.Score *= factor
			ms = append(ms, Match{Ref: refs[i], DM: dm})
		}
	}
	slices.SortStableFunc(ms, func(a, b Match) int { return cmp.Compare(b.DM.Score, a.DM.Score) })
	return ms[:min(len(ms), limit)], nil
}
