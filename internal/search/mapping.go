package search

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
)

// Field names in the index. Every text is indexed twice, once per language,
// because entries mix English and German and a query has no language tag:
// the English field (porter stemmer) makes "indexing" find "index", the German
// field (normalization + snowball stemmer) makes "Datenbanken" find "Datenbank".
// The index stores no text and keeps no term vectors: a hit is read from the
// database, its snippet marks found by analyzing the content again (hits.go).
const (
	fieldTitle     = "title"      // en analyzed
	fieldTitleDE   = "title_de"   // de analyzed
	fieldContent   = "content"    // en analyzed
	fieldContentDE = "content_de" // de analyzed
	fieldTags      = "tags"       // keyword: exact, case-sensitive filter
	fieldTagsText  = "tags_text"  // en analyzed, so a query word can score on a tag
	fieldTagsDE    = "tags_de"    // de analyzed
	fieldSlug      = "slug"       // en analyzed: "db-choice" is found by "choice"
	fieldVersion   = "version"    // stored only: which version a hit reads
)

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
	stored := func(name, typ string) *mapping.FieldMapping {
		return &mapping.FieldMapping{Name: name, Type: typ, Store: true}
	}

	doc := bleve.NewDocumentStaticMapping()
	prop := doc.AddFieldMappingsAt
	prop("title", text(fieldTitle, analyzerEN), text(fieldTitleDE, analyzerDE))
	prop("content", text(fieldContent, analyzerEN), text(fieldContentDE, analyzerDE))
	prop("tags", text(fieldTags, keyword.Name), text(fieldTagsText, analyzerEN), text(fieldTagsDE, analyzerDE))
	prop("slug", text(fieldSlug, analyzerEN))
	prop("version", stored(fieldVersion, "number"))

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
		"version": float64(v.Version),
	}
}
