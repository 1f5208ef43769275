package text

import (
	"bytes"
	"slices"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenmap"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
)

// One field per text, both languages' stems in it. Indexing every text in an
// English and a German field doubled the index's dictionary and postings
// (and the German stemmer dominated the build time); the memory benchmark
// (internal/search/memory_test.go) measured the second field at about half the index. Instead
// each word is indexed with its English (porter) stem and, where it differs,
// its German (normalized, snowball) stem at the same position, and the query
// is analyzed alike, so either language's word forms find each other as
// before: "indexing" finds "index", "Datenbanken" finds "Datenbank".
const (
	// bothStemsName is the token filter emitting both stems.
	bothStemsName = "munin_both_stems"
	// stopBoth drops, after lowercasing, the words that are stop words in
	// both languages ("in", "so"): of the other stop words a form that
	// passed the cross-language filters (an acronym in capitals, "IT",
	// "DES") stays searchable, as it did through one of the two fields.
	stopBoth = "munin_stop_both"
)

func init() {
	if err := registry.RegisterTokenFilter(bothStemsName, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return bothStems{}, nil
	}); err != nil {
		panic("search/text: " + err.Error())
	}
}

// bothStems replaces every token by its English stem and adds its German
// stem after it when that differs.
type bothStems struct{}

var (
	porterStem                      = porter.NewPorterStemmer()
	germanNorm                      = de.NewGermanNormalizeFilter()
	germanStem                      = de.NewGermanStemmerFilter()
	_          analysis.TokenFilter = bothStems{}
)

// Filter stems in place and interleaves the German variants.
func (bothStems) Filter(input analysis.TokenStream) analysis.TokenStream {
	german := make(analysis.TokenStream, len(input))
	for i, t := range input {
		c := *t
		c.Term = append([]byte(nil), t.Term...)
		german[i] = &c
	}
	porterStem.Filter(input)
	germanStem.Filter(germanNorm.Filter(german))
	out := make(analysis.TokenStream, 0, 2*len(input))
	for i, t := range input {
		out = append(out, t)
		if !bytes.Equal(t.Term, german[i].Term) {
			out = append(out, german[i])
		}
	}
	return out
}

// addBothStop registers stopBoth: the words on both stop lists.
func addBothStop(im *mapping.IndexMappingImpl) error {
	enWords, deWords := analysis.NewTokenMap(), analysis.NewTokenMap()
	if err := enWords.LoadBytes(en.EnglishStopWords); err != nil {
		return err
	}
	if err := deWords.LoadBytes(de.GermanStopWords); err != nil {
		return err
	}
	var tokens []any
	for w := range enWords {
		if deWords[w] {
			tokens = append(tokens, w)
		}
	}
	if err := im.AddCustomTokenMap(stopBoth, map[string]any{"type": tokenmap.Name, "tokens": tokens}); err != nil {
		return err
	}
	return im.AddCustomTokenFilter(stopBoth, map[string]any{"type": stop.Name, "stop_token_map": stopBoth})
}

// StemsOf is what the index makes of one lower-case word: its English stem
// and, where it differs, its German stem (the bothStems filter). A word from
// a query already passed the tokenizer and the stop filters. The stems are
// kept in a memo (memo.go); the caller gets a copy of its own.
func StemsOf(lower string) []string {
	return slices.Clone(stemsOfWords.get(lower, stemsOf))
}

// stemsOf is StemsOf without the memo.
func stemsOf(lower string) []string {
	ts := bothStems{}.Filter(analysis.TokenStream{{Term: []byte(lower), Position: 1, Start: 0, End: len(lower), Type: analysis.AlphaNumeric}})
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, string(t.Term))
	}
	return out
}
