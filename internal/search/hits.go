package search

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2/search"

	"munin/internal/memory"
)

// Hits are read from the database, not from the index. The index stores no
// text (only each document's version), and keeps no term vectors: both cost
// more memory than the text itself (see memory_test.go). A hit's title, tags
// and content come from the exact version the index matched, which is
// immutable, so a hit shows what was matched even if a newer version landed
// meanwhile. The snippet's marks are found by analyzing that content with the
// same analyzers as the query, which is what term locations recorded.

// hitsFrom turns bleve's matches into hits, reading each matched version
// from the Source. text is the query text, for the snippet marks.
func (r *Registry) hitsFrom(ctx context.Context, ref memory.ProjectRef, text string, matches search.DocumentMatchCollection) ([]memory.Hit, error) {
	hits := make([]memory.Hit, 0, len(matches))
	var terms []map[string]bool // per snippet analyzer; built on the first hit
	for _, dm := range matches {
		ver, _ := dm.Fields[fieldVersion].(float64)
		v, _, err := r.src.Get(ctx, ref, dm.ID, int(ver))
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("search %s: read hit %s: %w", ref, dm.ID, ctxErr)
			}
			return nil, memory.Internal(fmt.Errorf("search %s: read hit %s v%d: %w", ref, dm.ID, int(ver), err))
		}
		if terms == nil {
			terms = r.queryTerms(text)
		}
		h := memory.Hit{
			Slug: dm.ID, Score: dm.Score, Title: v.Title, Version: v.Version,
			UpdatedAt: v.CreatedAt, Tags: append([]string{}, v.Tags...),
		}
		h.Snippet = snippet(v.Content, r.matchSpans(v.Content, terms))
		hits = append(hits, h)
	}
	return hits, nil
}

// snippetAnalyzers are the analyzers of the content fields, in the order of
// queryTerms' result.
var snippetAnalyzers = []string{analyzerEN}

// queryTerms analyzes the query text as the content fields' match queries do.
func (r *Registry) queryTerms(text string) []map[string]bool {
	out := make([]map[string]bool, len(snippetAnalyzers))
	for i, name := range snippetAnalyzers {
		out[i] = map[string]bool{}
		for _, tok := range r.mapping.AnalyzerNamed(name).Analyze([]byte(text)) {
			out[i][string(tok.Term)] = true
		}
	}
	return out
}

// matchSpans returns the byte ranges of content whose analyzed term is a
// query term of the same analyzer: what the content fields' term locations
// held for the matched terms.
func (r *Registry) matchSpans(content string, terms []map[string]bool) []span {
	var spans []span
	for i, name := range snippetAnalyzers {
		if len(terms[i]) == 0 {
			continue
		}
		for _, tok := range r.mapping.AnalyzerNamed(name).Analyze([]byte(content)) {
			if terms[i][string(tok.Term)] {
				spans = append(spans, span{tok.Start, tok.End})
			}
		}
	}
	return spans
}
