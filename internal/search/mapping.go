package search

import (
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
)

// Field names in the index. Every text is indexed twice, once per language,
// because entries mix English and German and a query has no language tag:
// the English field (porter stemmer) makes "indexing" find "index", the German
// field (normalization + snowball stemmer) makes "Datenbanken" find "Datenbank".
// Only the English variant is stored, so the text is kept in memory once.
const (
	fieldTitle     = "title"      // en analyzed, stored (returned in hits)
	fieldTitleDE   = "title_de"   // de analyzed
	fieldContent   = "content"    // en analyzed, stored (snippets), term vectors
	fieldContentDE = "content_de" // de analyzed, term vectors (snippet offsets)
	fieldTags      = "tags"       // keyword: exact, case-sensitive filter; stored
	fieldTagsText  = "tags_text"  // en analyzed, so a query word can score on a tag
	fieldTagsDE    = "tags_de"    // de analyzed
	fieldSlug      = "slug"       // en analyzed: "db-choice" is found by "choice"
	fieldVersion   = "version"    // stored only
	fieldUpdated   = "updated_at" // stored only, RFC 3339 with nanoseconds
)

// newMapping returns the static mapping shared by all project indexes. It is
// read-only after construction, so sharing is safe. Nothing is dynamic and
// nothing goes to the _all field: every field is named and weighed in query.go.
func newMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := addAnalyzers(im); err != nil {
		return nil, err
	}

	text := func(name, analyzer string, store, vectors bool) *mapping.FieldMapping {
		return &mapping.FieldMapping{
			Name: name, Type: "text", Analyzer: analyzer,
			Index: true, Store: store, IncludeTermVectors: vectors,
		}
	}
	stored := func(name, typ string) *mapping.FieldMapping {
		return &mapping.FieldMapping{Name: name, Type: typ, Store: true}
	}

	doc := bleve.NewDocumentStaticMapping()
	prop := doc.AddFieldMappingsAt
	prop("title", text(fieldTitle, analyzerEN, true, false), text(fieldTitleDE, analyzerDE, false, false))
	prop("content", text(fieldContent, analyzerEN, true, true), text(fieldContentDE, analyzerDE, false, true))
	prop("tags", text(fieldTags, keyword.Name, true, false), text(fieldTagsText, analyzerEN, false, false), text(fieldTagsDE, analyzerDE, false, false))
	prop("slug", text(fieldSlug, analyzerEN, false, false))
	prop("version", stored(fieldVersion, "number"))
	prop("updated_at", stored(fieldUpdated, "text"))

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
		"title":      v.Title,
		"content":    v.Content,
		"tags":       tags,
		"slug":       v.Slug,
		"version":    float64(v.Version),
		"updated_at": v.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}
