package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"
)

// TestMatchSpansAsFullAnalysis: the word pre-filter of matchSpans finds the
// same marks as analyzing the whole content, for English, German and mixed
// word forms, umlauts, possessives, acronyms and random words.
func TestMatchSpansAsFullAnalysis(t *testing.T) {
	r := newTestRegistry(t, newFakeSource(), Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{
		"Die Häuser der Datenbanken; John's indexing was invalidated. IT owns the Boeing queue, Grüße aus Köln!",
		"Straße STRASSE strasse Maße massen Aerodynamik aero über Ueber toy toys cry cries happy happiness",
		prose(rng, 4<<10),
		randomWords(rng, 4<<10),
	}
	var queries []string
	for _, text := range texts {
		words := strings.Fields(text)
		for range 20 {
			queries = append(queries, words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))])
		}
	}
	for _, text := range texts {
		for _, q := range queries {
			terms := r.queryTerms(q)
			got := r.matchSpans(text, terms)
			var want []span
			for i, name := range snippetAnalyzers {
				for _, tok := range r.mapping.AnalyzerNamed(name).Analyze([]byte(text)) {
					if terms[i][string(tok.Term)] {
						want = append(want, span{tok.Start, tok.End})
					}
				}
			}
			less := func(a, b span) int { return a.start - b.start }
			slices.SortFunc(got, less)
			slices.SortFunc(want, less)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("query %q in %.40q: spans %v, want %v", q, text, got, want)
			}
		}
	}
}

// BenchmarkMatchSpans64k is the snippet work of one 64 KB hit.
func BenchmarkMatchSpans64k(b *testing.B) {
	r := newTestRegistry(b, newFakeSource(), Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ name, text string }{{"random", randomWords(rng, 64<<10)}, {"prose", prose(rng, 64<<10)}} {
		b.Run(c.name, func(b *testing.B) {
			words := strings.Fields(c.text)
			terms := r.queryTerms(words[7] + " " + words[99] + " Datenbank")
			for b.Loop() {
				r.matchSpans(c.text, terms)
			}
		})
	}
}

// TestGermanNormalizeAsBleve: mayMatch's normalization is bleve's.
func TestGermanNormalizeAsBleve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	letters := []rune("aeouiqyäöüßbxAE")
	words := []string{"häuser", "grüße", "boeing", "aeae", "queue", "straße", "ueber", "quelle", ""}
	for range 2000 {
		w := make([]rune, 1+rng.IntN(7))
		for i := range w {
			w[i] = letters[rng.IntN(len(letters))]
		}
		words = append(words, string(w))
	}
	for _, w := range words {
		tok := &analysis.Token{Term: []byte(w)}
		want := string(de.NewGermanNormalizeFilter().Filter(analysis.TokenStream{tok})[0].Term)
		if got := string(germanNormalize([]byte(w))); got != want {
			t.Errorf("germanNormalize(%q) = %q, bleve %q", w, got, want)
		}
	}
}
