package rank

import (
	"fmt"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
	"munin/internal/search/text"
)

// slugsOf lists "project/slug" per match, and the kind of its first Alt.
func slugsOf(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Ref.Project + "/" + m.DM.ID
		if len(m.Alts) > 0 {
			out[i] += " (" + m.Alts[0].Kind + ")"
		}
	}
	return out
}

// TestJoinRanksWithTwoWords: an entry holding the compound of two query
// words ranks below the entries holding both words as written and above
// those holding one of them, even when those fill the limit; scores fall
// along the list. Over two projects alike.
func TestJoinRanksWithTwoWords(t *testing.T) {
	contents := []string{
		"Die Kosten sind hoch.",               // e0: one word
		"Die Kosten der Speicherung steigen.", // e1: both words
		"Die Speicherkosten sinken.",          // e2: the compound
		"Kosten, Kosten, Kosten.",             // e3: one word, often
		"Noch mehr Kosten.",                   // e4: one word
	}
	q := Query{Terms: text.Analyze("Kosten der Speicherung"), Limit: 3}
	one := indexOf(t, contents...)
	projB := memory.ProjectRef{Workspace: "ws", Project: "beta"}
	for _, c := range []struct {
		name string
		refs []memory.ProjectRef
		idxs []bleve.Index
		want []string
	}{
		{"one project", []memory.ProjectRef{projA}, []bleve.Index{one},
			[]string{"alpha/e1", "alpha/e2 (join)", "alpha/e3"}},
		{"two projects", []memory.ProjectRef{projA, projB},
			[]bleve.Index{indexOf(t, contents[:3]...), indexOfRef(t, projB, contents[3:]...)},
			[]string{"alpha/e1", "alpha/e2 (join)", "beta/e0"}},
	} {
		ms, err := Tiers(testCtx(t), c.refs, c.idxs, q, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := slugsOf(ms); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		for i := 1; i < len(ms); i++ {
			if ms[i].DM.Score > ms[i-1].DM.Score {
				t.Errorf("%s: score %v after %v", c.name, ms[i].DM.Score, ms[i-1].DM.Score)
			}
		}
	}
	// Without compounds, the words as written alone.
	ms, err := Tiers(testCtx(t), []memory.ProjectRef{projA}, []bleve.Index{one}, q, Options{NoCompounds: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.DM.ID == "e2" {
			t.Errorf("NoCompounds: %q holds the compound", slugsOf(ms))
		}
	}
}

// TestDistinctWords: a repeated query word counts once.
func TestDistinctWords(t *testing.T) {
	if got := distinctWords(text.Analyze("Kosten kosten Speicher").Seq); len(got) != 2 {
		t.Errorf("distinctWords = %+v, want kosten and speicher", got)
	}
}
