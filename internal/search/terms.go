package search

import (
	"slices"
	"strings"
)

// queryTerms is a recall's text after analysis. bleve's match query makes one
// term search per token, repeats included, so "kafka kafka …" would cost as
// much as as many different words; the query is built from distinct terms
// instead.
type queryTerms struct {
	// byAnalyzer holds, per analyzer the weighted fields use, the distinct
	// terms in the order they first appear.
	byAnalyzer map[string][]string
	// words is the number of distinct words among them: the analyzer puts a
	// word's English and German stems at one position, and a word counts
	// once whichever stems it has (see count).
	words int
	// seq is the distinct words in the order they appear, for the compound
	// and typo expansions (compound.go, fuzzy.go).
	seq []queryWord
}

// queryWord is one word of a recall that passed the stop filters: as written,
// in lower case, and the terms (stems) it searches.
type queryWord struct {
	lower string
	stems []string
}

// analyzeQuery runs text through every analyzer the weighted fields use.
func (r *Registry) analyzeQuery(text string) queryTerms {
	terms := queryTerms{byAnalyzer: map[string][]string{}}
	for _, fb := range fieldBoosts {
		if _, done := terms.byAnalyzer[fb.analyzer]; done {
			continue
		}
		a := r.mapping.AnalyzerNamed(fb.analyzer)
		if a == nil {
			// A field names an analyzer the mapping lacks: a programming
			// error that every test of a search would show.
			panic("search: no analyzer " + fb.analyzer)
		}
		var distinct []string
		seen := map[string]bool{}
		stemsAt := map[int][]string{} // position → the terms of that word
		lowerAt := map[int]string{}   // position → the word as written, in lower case
		var positions []int
		for _, tok := range a.Analyze([]byte(text)) {
			t := string(tok.Term)
			if _, ok := stemsAt[tok.Position]; !ok {
				positions = append(positions, tok.Position)
				lowerAt[tok.Position] = strings.ToLower(text[tok.Start:tok.End])
			}
			stemsAt[tok.Position] = append(stemsAt[tok.Position], t)
			if !seen[t] {
				seen[t] = true
				distinct = append(distinct, t)
			}
		}
		words := map[string]bool{}
		for _, pos := range positions {
			stems := stemsAt[pos]
			slices.Sort(stems)
			key := strings.Join(stems, " ")
			if !words[key] {
				terms.seq = append(terms.seq, queryWord{lower: lowerAt[pos], stems: stems})
			}
			words[key] = true
		}
		terms.byAnalyzer[fb.analyzer] = distinct
		terms.words = max(terms.words, len(words))
	}
	return terms
}

// count is the number of distinct words the recall searches for (what
// memory.MaxQueryTerms limits): function words of either language are gone,
// repeats in any case count once, and so do forms that give the same stems.
// A word searches at most two terms (its English and German stem), so the
// cost of a search is bounded by twice this count.
func (t queryTerms) count() int { return t.words }
