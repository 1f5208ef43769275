package search

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

// Bounds of a recall's result list (memory's limits table): DefaultLimit is
// the number of hits when SearchQuery.Limit is 0 or less; MaxLimit caps it.
const (
	DefaultLimit = memory.DefaultRecallLimit
	MaxLimit     = memory.MaxRecallLimit
)

// fieldBoosts weighs where a word matched: a word in the title or a tag says
// more about what an entry is than a word somewhere in its content. Each text
// holds both languages' stems of each word (see mapping.go).
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

// Search runs a recall over a project's live entries, best first.
//
// The text is analyzed like the indexed text (match queries, never bleve's
// query-string syntax), so quotes, +, -, field:value, * or ~ are just
// characters and can never make a query fail. Text that is empty after
// trimming is CodeInvalid; text with no searchable word left after analysis
// (only punctuation or stop words) finds nothing. Tags restrict hits to
// entries carrying all of them (exact, case-sensitive) without changing the
// score. Limit is DefaultLimit when 0 or less and at most MaxLimit.
// Entries matching a query word as written (or a form of it) come first;
// then, while the limit is not filled, entries matching a compound's parts
// or a compound of query words, then entries matching a misspelled word's
// correction (compound_tiers.go; Options.NoCompounds, NoTypos).
// The first Search of a project builds its index; every Search first waits
// for the refreshes queued before it (see Queue). Every hit carries ref as
// its Project.
func (r *Registry) Search(ctx context.Context, ref memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	rc, err := r.prepare(q)
	if err != nil {
		return nil, err
	}
	return r.searchOne(ctx, ref, rc)
}

// searchOne is Search after the query was prepared.
func (r *Registry) searchOne(ctx context.Context, ref memory.ProjectRef, rc recall) ([]memory.Hit, error) {
	ms, err := r.rankOne(ctx, ref, rc)
	if err != nil {
		return nil, err
	}
	return r.hitsFrom(ctx, rc.text, ms)
}

// rankOne is searchOne's ranking: the matches, not yet read from the Source.
func (r *Registry) rankOne(ctx context.Context, ref memory.ProjectRef, rc recall) ([]match, error) {
	p, err := r.project(ref)
	if err != nil {
		return nil, err
	}
	// Read-your-writes: writes queued before this search are applied first,
	// or the search answers unavailable (Options.IndexWait).
	idx, release, err := p.Ready(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.searchTiers(ctx, []memory.ProjectRef{ref}, []bleve.Index{idx}, rc)
}

// recall is a validated, analyzed SearchQuery.
type recall struct {
	text  string
	terms text.Terms
	tags  []string
	limit int
}

// prepare validates q and analyzes its text once.
func (r *Registry) prepare(q memory.SearchQuery) (recall, error) {
	query, err := text.CheckQuery(q.Text)
	if err != nil {
		return recall{}, err
	}
	if err := memory.ValidateTags(q.Tags); err != nil {
		return recall{}, err
	}
	// The query is analyzed once: its distinct words bound the search's
	// cost (each is a term search over every text field), so a query with
	// more than the limit is refused before it waits for or costs a search.
	terms := text.Analyze(query)
	if err := text.CheckTerms(terms); err != nil {
		return recall{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	return recall{text: query, terms: terms, tags: q.Tags, limit: min(limit, MaxLimit)}, nil
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
