package text

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	unitok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenmap"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Every text is indexed with English and German stems (see stems.go), so the
// analyzer drops both languages' function words. Otherwise "the" would match
// every English entry through its German stem, "der die das" every German
// entry through the English one, and a question ("what is the retention of
// kafka") would hit every entry — a search log could then never show what
// agents missed. Each language's stop words are dropped as written in lower
// case or capitalized ("the", "The", "Der"), before lowercasing, and after it
// only the words on both lists: acronyms in capitals (MIT, IT, ES, DES, WAR)
// stay searchable.
const (
	// AnalyzerEN analyzes every indexed text and the query: the stop filters
	// below, then both languages' stems (stems.go).
	AnalyzerEN = "munin_en"
	// German stop words as the English fields drop them, and the reverse.
	stopDEForEN = "munin_stop_de_for_en"
	stopENForDE = "munin_stop_en_for_de"
)

// germanStopsKeptInEnglish are German stop words that are also technical
// words people search for (/usr/bin, dir, man page, du): the English fields
// keep them. Other overlaps ("die", "hat", "war") are far more often German
// articles and verbs in a mixed memory, so they are dropped in both.
var germanStopsKeptInEnglish = map[string]bool{"bin": true, "dir": true, "du": true, "man": true}

// AddAnalyzers registers Munin's analyzers (AnalyzerEN and its filters) in
// im; the index mapping names them for its fields.
func AddAnalyzers(im *mapping.IndexMappingImpl) error {
	if err := addCrossStop(im, stopDEForEN, de.GermanStopWords, germanStopsKeptInEnglish); err != nil {
		return err
	}
	if err := addCrossStop(im, stopENForDE, en.EnglishStopWords, nil); err != nil {
		return err
	}
	if err := addBothStop(im); err != nil {
		return err
	}
	return im.AddCustomAnalyzer(AnalyzerEN, map[string]any{
		"type": custom.Name, "tokenizer": unitok.Name,
		"token_filters": []any{en.PossessiveName, stopDEForEN, stopENForDE, lowercase.Name, stopBoth, bothStemsName},
	})
}

// addCrossStop registers a stop filter named name for the words of list
// (bleve's stop-word file format) but keep, in lower case and capitalized.
func addCrossStop(im *mapping.IndexMappingImpl, name string, list []byte, keep map[string]bool) error {
	words := analysis.NewTokenMap()
	if err := words.LoadBytes(list); err != nil {
		return err
	}
	tokens := make([]any, 0, 2*len(words))
	for w := range words {
		if keep[w] {
			continue
		}
		r, size := utf8.DecodeRuneInString(w)
		tokens = append(tokens, w, string(unicode.ToUpper(r))+w[size:])
	}
	if err := im.AddCustomTokenMap(name, map[string]any{"type": tokenmap.Name, "tokens": tokens}); err != nil {
		return err
	}
	return im.AddCustomTokenFilter(name, map[string]any{"type": stop.Name, "stop_token_map": name})
}
