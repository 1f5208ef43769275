package search

// queryTerms is a recall's text after analysis: per analyzer, the distinct
// terms in the order they first appear. bleve's match query makes one term
// search per token, repeats included, so "kafka kafka …" would cost as much
// as as many different words; the query is built from these terms instead.
type queryTerms map[string][]string

// analyzeQuery runs text through every analyzer the weighted fields use.
func (r *Registry) analyzeQuery(text string) queryTerms {
	terms := queryTerms{}
	for _, fb := range fieldBoosts {
		if _, done := terms[fb.analyzer]; done {
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
		for _, tok := range a.Analyze([]byte(text)) {
			if t := string(tok.Term); !seen[t] {
				seen[t] = true
				distinct = append(distinct, t)
			}
		}
		terms[fb.analyzer] = distinct
	}
	return terms
}

// count is the number of distinct terms the recall searches for: the most
// any one analyzer keeps. Function words (of either language) are gone and
// forms of one stem count once, so it is what the search really costs.
func (t queryTerms) count() int {
	n := 0
	for _, terms := range t {
		n = max(n, len(terms))
	}
	return n
}

// QueryTerms counts the distinct terms a recall of text would search for
// (see memory.MaxQueryTerms); the service refuses queries with more before
// they cost a search.
func (r *Registry) QueryTerms(text string) int {
	return r.analyzeQuery(text).count()
}
