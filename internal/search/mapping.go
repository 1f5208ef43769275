package search

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
)

// Field names in the index. Entries mix English and German and a query has
// no language tag, so every text field holds each word's English (porter) and
// German (snowball) stem (stems.go): "indexing" finds "index", "Datenbanken"
// finds "Datenbank". The index stores no text and keeps no term vectors: a hit
// is read from the database, its snippet marks found by analyzing the content
// again (hits.go). Both cost more memory than the text (memory_test.go).
const (
	fieldTitle   = "title"   // both stems
	fieldContent = "content" // both stems
	fieldTags    = "tags"    // keyword: exact, case-sensitive filter
	fieldKeys    = "keys"    // tags and slug, both stems: a query word scores on a tag, "db-choice" is found by "choice"
)

// indexFormat names the mapping and analysis an index on disk was built
// with. Raise it with every change to newMapping, the analyzers (analyzers.go,
// stems.go) or docFor: an index recording another format is rebuilt from the
// database, never trusted.
const indexFormat = 3

// newMapping returns the static mapping shared by all project indexes. It is
// read-only after construction, so sharing is safe. Nothing is dynamic and
// nothing goes to the _all field: every field is named and weighed in query.go.
func newMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := addAnalyzers(im); err != nil {
		return nil, err
	}

	text := func(name, analyzer string) *mapping.FieldMapping {
		return &mapping.FieldMapping{Name: name, Type: "text", Analyzer: analyzer, Index: true}
	}

	doc := bleve.NewDocumentStaticMapping()
	prop := doc.AddFieldMappingsAt
	prop("title", text(fieldTitle, analyzerEN))
	prop("content", text(fieldContent, analyzerEN))
	// Tags and slug share one field: each field is one more term search per
	// query term, and both name what an entry is about in a few words.
	prop("tags", text(fieldTags, keyword.Name), text(fieldKeys, analyzerEN))
	prop("slug", text(fieldKeys, analyzerEN))

	im.DefaultMapping = doc
	im.DefaultAnalyzer = analyzerEN
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	if err := im.Validate(); err != nil {
		return nil, err
	}
	return im, nil
}

// docFor turns a live version into the value bleve maps. The slug is the
// document id (one index per project, so it is unique).
func docFor(v memory.Version) map[string]any {
	tags := make([]any, len(v.Tags))
	for i, t := range v.Tags {
		tags[i] = t
	}
	return map[string]any{
		"title":   v.Title,
		"content": v.Content,
		"tags":    tags,
		"slug":    v.Slug,
	}
}

// IndexFormat is indexFormat for those outside: the nodes of a cluster
// agree on it, so that no node trusts an index another would rebuild.
const IndexFormat = indexFormat
