package rank

import (
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// TestExpansionBadInput (the lookup bound; package search checks the
// answers to bad queries): the expansions of the worst query, the most
// words, each a compound candidate and unknown, stay within the bound of
// dictionary lookups.
func TestExpansionBadInput(t *testing.T) {
	src := searchtest.NewSource()
	searchtest.Fill(func(slug, title, content string, tags ...string) { src.Put(projA, slug, title, content, tags...) }, 200)
	src.Put(projA, "mixed", "Datenbank база", "Datenbank データベース база данных")
	p := newProject(t, src, projA)
	var fifty []string
	for i := range 50 {
		fifty = append(fifty, searchtest.BenchWords[i%len(searchtest.BenchWords)]+"x")
	}
	// The bound holds for the worst query: the most words, each a compound
	// candidate and unknown.
	idx, release, err := p.Ready(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	terms := text.Analyze(strings.Join(fifty[:memory.MaxQueryTerms], " "))
	if err := text.CheckTerms(terms); err != nil {
		t.Fatal(err)
	}
	v := newVocab(testCtx(t), []bleve.Index{idx})
	defer v.close()
	compounds(terms.Seq, v)
	typos(terms.Seq, v)
	if v.lookups > maxVocabLookups {
		t.Fatalf("%d dictionary lookups, bound %d", v.lookups, maxVocabLookups)
	}
	t.Logf("worst query: %d dictionary lookups", v.lookups)
}
