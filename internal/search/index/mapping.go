package index

import (
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// The index stores no text and keeps no term vectors: a hit is read from the
// database, its snippet marks found by analyzing the content again
// (internal/search/text). Both cost more memory than the text
// (memory_test.go). The fields and their analysis are text's.
//
// Nothing else is indexed: no doc values, nothing in _all (bleve keeps it as
// an empty field, about 100 bytes a segment), no stored value but the id
// (TestSegmentsHoldOnlyWhatSearchReads). So a small project's index is cost per
// term, not per field: 100 entries of the load test's text (Zipf words, 25
// of each entry's terms in no other entry) are 3,200 terms, whose
// postings hold 78 % of the segment as scorch first writes it and the term
// dictionary 20 % (2026-12-04, issue 27). zap writes a term in one document
// into the dictionary alone only when it merges segments, and a small build is
// one segment scorch never merges: written through a merge it is a third
// smaller. The mapping has nothing left to cut.

// indexFormat names the mapping and analysis an index on disk was built
// with. Raise it with every change to NewMapping, the analyzers
// (internal/search/text) or docFor: an index recording another format is rebuilt from the
// database, never trusted.
//
// 4: the index stores a stub instead of the mapping (shared_mapping.go).
const indexFormat = 4

// NewMapping returns the static mapping shared by all project indexes. It is
// read-only after construction, so sharing is safe. Nothing is dynamic and
// nothing goes to the _all field: every field is named and weighed by
// internal/search/rank.
func NewMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := text.AddAnalyzers(im); err != nil {
		return nil, err
	}

	field := func(name, analyzer string) *mapping.FieldMapping {
		return &mapping.FieldMapping{Name: name, Type: "text", Analyzer: analyzer, Index: true}
	}

	doc := bleve.NewDocumentStaticMapping()
	prop := doc.AddFieldMappingsAt
	prop("title", field(text.FieldTitle, text.AnalyzerEN))
	prop("content", field(text.FieldContent, text.AnalyzerEN))
	// Tags and slug share one field: each field is one more term search per
	// query term, and both name what an entry is about in a few words.
	prop("tags", field(text.FieldTags, keyword.Name), field(text.FieldKeys, text.AnalyzerEN))
	prop("slug", field(text.FieldKeys, text.AnalyzerEN))

	im.DefaultMapping = doc
	im.DefaultAnalyzer = text.AnalyzerEN
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

// Format is indexFormat for those outside: the nodes of a cluster
// agree on it, so that no node trusts an index another would rebuild.
const Format = indexFormat
