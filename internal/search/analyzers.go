package search

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenmap"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Every text is indexed in English and in German (see mapping.go), so each
// analyzer drops the function words of both languages. Otherwise "the"
// would match every English entry through the German fields, "der die das"
// every German entry through the English ones, and a question ("what is the
// retention of kafka") would hit every entry — a search log could then
// never show what agents missed.
const (
	// analyzerEN is bleve's "en" analyzer plus the German stop words.
	analyzerEN = "munin_en"
	// analyzerDE uses the snowball stemmer: bleve's "de" analyzer uses the
	// light one, and snowball conflates more plural and case forms
	// ("Entscheidungen" → "entscheid"), which is what a recall wants.
	analyzerDE = "munin_de"
	// stopDEForEN is the German stop list as the English fields use it.
	stopDEForEN = "munin_stop_de_for_en"
)

// germanStopsKeptInEnglish are German stop words that are also technical
// words people search for (/usr/bin, dir, man page, du): the English fields
// keep them. Other overlaps ("die", "hat", "war") are far more often German
// articles and verbs in a mixed memory, so they are dropped in both.
var germanStopsKeptInEnglish = map[string]bool{"bin": true, "dir": true, "du": true, "man": true}

func addAnalyzers(im *mapping.IndexMappingImpl) error {
	german := analysis.NewTokenMap()
	if err := german.LoadBytes(de.GermanStopWords); err != nil {
		return err
	}
	tokens := make([]any, 0, len(german))
	for w := range german {
		if !germanStopsKeptInEnglish[w] {
			tokens = append(tokens, w)
		}
	}
	if err := im.AddCustomTokenMap(stopDEForEN, map[string]any{"type": tokenmap.Name, "tokens": tokens}); err != nil {
		return err
	}
	if err := im.AddCustomTokenFilter(stopDEForEN, map[string]any{"type": stop.Name, "stop_token_map": stopDEForEN}); err != nil {
		return err
	}
	if err := im.AddCustomAnalyzer(analyzerEN, map[string]any{
		"type": custom.Name, "tokenizer": unicode.Name,
		"token_filters": []any{en.PossessiveName, lowercase.Name, en.StopName, stopDEForEN, porter.Name},
	}); err != nil {
		return err
	}
	return im.AddCustomAnalyzer(analyzerDE, map[string]any{
		"type": custom.Name, "tokenizer": unicode.Name,
		"token_filters": []any{lowercase.Name, de.StopName, en.StopName, de.NormalizeName, de.SnowballStemmerName},
	})
}
