package rank

import (
	"context"
	"errors"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// fieldBoosts weighs where a word matched: a word in the title or a tag says
// more about what an entry is than a word somewhere in its content. Each text
// holds both languages' stems of each word (see index/mapping.go).
// The analyzer is named per field because bleve's lookup by field name does
// not find fields renamed inside a property and would fall back to the default.
var fieldBoosts = []struct {
	field    string
	analyzer string
	boost    float64
}{
	{text.FieldTitle, text.AnalyzerEN, 4},
	{text.FieldKeys, text.AnalyzerEN, 2},
	{text.FieldContent, text.AnalyzerEN, 1},
}

// runSearch runs one bleve search for the best limit matches of q.
func runSearch(ctx context.Context, idx bleve.Index, ref memory.ProjectRef, q query.Query, limit int) (search.DocumentMatchCollection, error) {
	req := bleve.NewSearchRequestOptions(q, limit, 0, false)
	res, err := idx.SearchInContext(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, fmt.Errorf("search %s: %w", ref, ctxErr)
		}
		return nil, memory.Internal(fmt.Errorf("search %s: %w", ref, err))
	}
	return res.Hits, nil
}

// buildQuery ORs the query's terms per weighted field; tags become a
// filter. Each field's part is what bleve's match query builds (a disjunction
// of term queries, both boosted), but over distinct terms only. boosts, when
// not nil, replaces the boost of each term query, in the order of leaves.
func buildQuery(terms text.Terms, tags []string, boosts []float64) query.Query {
	return withTags(exactQuery(terms, &booster{boosts: boosts}), tags)
}

// exactQuery is buildQuery's query before the tag filter.
func exactQuery(terms text.Terms, bs *booster) query.Query {
	dq := bleve.NewDisjunctionQuery()
	for _, fb := range fieldBoosts {
		words := terms.ByAnalyzer[fb.analyzer]
		if len(words) == 0 {
			dq.AddQuery(bleve.NewMatchNoneQuery())
			continue
		}
		field := bleve.NewDisjunctionQuery()
		for _, w := range words {
			tq := bleve.NewTermQuery(w)
			tq.SetField(fb.field)
			tq.SetBoost(bs.next(fb.boost))
			field.AddQuery(tq)
		}
		field.SetMin(1)
		field.SetBoost(fb.boost)
		dq.AddQuery(field)
	}
	return dq
}

// withTags restricts q to entries carrying every tag, without changing scores.
func withTags(q query.Query, tags []string) query.Query {
	if len(tags) == 0 {
		return q
	}
	filter := bleve.NewConjunctionQuery()
	for _, t := range tags {
		tq := bleve.NewTermQuery(t)
		tq.SetField(text.FieldTags)
		filter.AddQuery(tq)
	}
	if bq, ok := q.(*query.BooleanQuery); ok {
		bq.AddFilter(filter)
		return bq
	}
	bq := bleve.NewBooleanQuery()
	bq.AddMust(q)
	bq.AddFilter(filter)
	return bq
}
