package text

import (
	"slices"
	"strings"
)

// Terms is a recall's text after analysis. bleve's match query makes one
// term search per token, repeats included, so "kafka kafka …" would cost as
// much as as many different words; the query is built from distinct terms
// instead.
type Terms struct {
	// ByAnalyzer holds, per analyzer the weighted fields use (Analyzers),
	// the distinct terms in the order they first appear.
	ByAnalyzer map[string][]string
	// Seq is the distinct words in the order they appear, for the compound
	// and typo expansions (internal/search/rank).
	Seq []Word
	// words is the number of distinct words among them: the analyzer puts a
	// word's English and German stems at one position, and a word counts
	// once whichever stems it has (see Count).
	words int
}

// Word is one word of a recall that passed the stop filters: as written,
// in lower case, and the terms (stems) it searches.
type Word struct {
	Lower string
	Stems []string
}

// Analyze runs text through every analyzer the weighted fields use.
func Analyze(text string) Terms {
	terms := Terms{ByAnalyzer: map[string][]string{}}
	for _, name := range Analyzers {
		if _, done := terms.ByAnalyzer[name]; done {
			continue
		}
		a := Analyzer(name)
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
				terms.Seq = append(terms.Seq, Word{Lower: lowerAt[pos], Stems: stems})
			}
			words[key] = true
		}
		terms.ByAnalyzer[name] = distinct
		terms.words = max(terms.words, len(words))
	}
	return terms
}

// Count is the number of distinct words the recall searches for (what
// memory.MaxQueryTerms limits): function words of either language are gone,
// repeats in any case count once, and so do forms that give the same stems.
// A word searches at most two terms (its English and German stem), so the
// cost of a search is bounded by twice this count.
func (t Terms) Count() int { return t.words }
