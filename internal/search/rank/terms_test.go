package rank

import (
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/search/query"

	"munin/internal/search/text"
)

// TestQueryTermsCountsWhatIsSearched: repeats (in any case) count once,
// function words of either language not at all, and the count bounds what the
// built query searches: one term query per distinct term and field, at most
// two (English and German stem) per word (bleve's match query would make one
// per word, repeats included).
func TestQueryTermsCountsWhatIsSearched(t *testing.T) {
	for q, want := range map[string]int{
		"the and of der die das und":        0,
		"Kafka kafka KAFKA":                 1,
		"what is the retention of kafka":    2,
		"kafka retention kafka retention":   2,
		strings.Repeat("postgres ", 100):    1,
		"Datenbank Datenbanken replication": 3, // one German stem, but two English ones: two words
		"Datenbank datenbank replication":   2,
	} {
		terms := text.Analyze(q)
		if got := terms.Count(); got != want {
			t.Errorf("%q counts %d terms (%v), want %d", q, got, terms, want)
		}
		dq := buildQuery(terms, nil, nil).(*query.DisjunctionQuery)
		for i, part := range dq.Disjuncts {
			fb := fieldBoosts[i]
			n := 0
			if d, ok := part.(*query.DisjunctionQuery); ok {
				n = len(d.Disjuncts)
			}
			if n != len(terms.ByAnalyzer[fb.analyzer]) || n > 2*want {
				t.Errorf("%q: field %s searches %d terms, want %d (at most two per word)", q, fb.field, n, len(terms.ByAnalyzer[fb.analyzer]))
			}
		}
	}
}
