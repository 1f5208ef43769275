package text

import (
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Field names in the index. Entries mix English and German and a query has
// no language tag, so every text field holds each word's English (porter) and
// German (snowball) stem (stems.go): "indexing" finds "index", "Datenbanken"
// finds "Datenbank". The index maps them (internal/search/index), the
// ranking searches them (internal/search/rank).
const (
	FieldTitle   = "title"   // both stems
	FieldContent = "content" // both stems
	FieldTags    = "tags"    // keyword: exact, case-sensitive filter
	FieldKeys    = "keys"    // tags and slug, both stems: a query word scores on a tag, "db-choice" is found by "choice"
)

// Analyzers are the analyzers of the weighted text fields (title, keys,
// content), each once: a query is analyzed with every one of them.
var Analyzers = []string{AnalyzerEN}

// analyzers is a mapping holding only Munin's analyzers, built once: the
// same configuration the index maps its fields with (AddAnalyzers), so a
// query analyzed here yields the terms the index holds.
var analyzers = sync.OnceValue(func() *mapping.IndexMappingImpl {
	im := mapping.NewIndexMapping()
	if err := AddAnalyzers(im); err != nil {
		// The analyzers are built in: a programming error that every test
		// of a search would show.
		panic("search/text: invalid analyzers: " + err.Error())
	}
	return im
})

// Analyzer returns the analyzer named name (one of Analyzers). It panics for
// a name Munin does not define, a programming error.
func Analyzer(name string) analysis.Analyzer {
	a := analyzers().AnalyzerNamed(name)
	if a == nil {
		panic("search/text: no analyzer " + name)
	}
	return a
}
