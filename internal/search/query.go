package search

import (
	"context"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
	"munin/internal/search/rank"
	"munin/internal/search/text"
)

// Bounds of a recall's result list (memory's limits table): DefaultLimit is
// the number of hits when SearchQuery.Limit is 0 or less; MaxLimit caps it.
const (
	DefaultLimit = memory.DefaultRecallLimit
	MaxLimit     = memory.MaxRecallLimit
)

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
// correction (package rank; Options.NoCompounds, NoTypos).
// The first Search of a project builds its index; every Search first waits
// for the refreshes queued before it (see Queue). Every hit carries ref as
// its Project. Hits of entries past their valid_until or superseded are
// kept in place and marked (Hit.State); SearchProjects, recall's path,
// leaves them out unless q.IncludeStale.
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
func (r *Registry) rankOne(ctx context.Context, ref memory.ProjectRef, rc recall) ([]rank.Match, error) {
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
	return rank.Tiers(ctx, []memory.ProjectRef{ref}, []bleve.Index{idx}, rc.Query, r.rankOpts())
}

// recall is a validated, analyzed SearchQuery: its text, for the snippet
// marks, and what the ranking searches.
type recall struct {
	text string
	rank.Query
}

// rankOpts are the ranking's switches of Options.
func (r *Registry) rankOpts() rank.Options {
	return rank.Options{NoCompounds: r.opts.NoCompounds, NoTypos: r.opts.NoTypos}
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
	// The query is analyzed once (and its text's analysis kept: the Terms
	// are shared with recalls of the same text, read-only): its distinct
	// words bound the search's cost (each is a term search over every text
	// field), so a query with more than the limit is refused before it
	// waits for or costs a search.
	terms := text.AnalyzeQuery(query)
	if err := text.CheckTerms(terms); err != nil {
		return recall{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	return recall{text: query, Query: rank.Query{Terms: terms, Tags: q.Tags, Limit: min(limit, MaxLimit)}}, nil
}
