package text

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"

	"munin/internal/search/searchtest"
)

// TestMatchSpansAsFullAnalysis: the word pre-filter of matchSpans finds the
// same marks as analyzing the whole content, for English, German and mixed
// word forms, umlauts, possessives, acronyms and random words.
func TestMatchSpansAsFullAnalysis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{
		"Die Häuser der Datenbanken; John's indexing was invalidated. IT owns the Boeing queue, Grüße aus Köln!",
		"Straße STRASSE strasse Maße massen Aerodynamik aero über Ueber toy toys cry cries happy happiness",
		// Where words meet other scripts, marks, joiners and odd spaces.
		"日本Datenbank Datenbank日本 カタカナindex ab\u0301c \u0301Datenbank x_Datenbank _index " +
			"Daten\u202FBank Daten\u00A0Bank\tindex\nIndex\r\nDB-Index e.g. 3.5Datenbank Datenbank's " +
			"(Index) «Daten» Index… αβγindex index😀Datenbank Ünderung ÄÖÜäöü ǅemo Ωmega",
		searchtest.Prose(rng, 4<<10),
		searchtest.RandomWords(rng, 4<<10),
		trickyText(rng, 4<<10),
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
			mk := NewMarker(q)
			got, terms := mk.Spans(text), mk.terms
			var want []Span
			for i, name := range snippetAnalyzers {
				for _, tok := range Analyzer(name).Analyze([]byte(text)) {
					if _, ok := terms[i][string(tok.Term)]; ok {
						want = append(want, Span{tok.Start, tok.End})
					}
				}
			}
			less := func(a, b Span) int { return a.Start - b.Start }
			slices.SortFunc(got, less)
			slices.SortFunc(want, less)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("query %q in %.40q: spans %v, want %v", q, text, got, want)
			}
		}
	}
}

// trickyText joins word pieces and other scripts with every kind of
// separator, so words meet ideographs, marks, joiners and odd spaces.
func trickyText(rng *rand.Rand, n int) string {
	pieces := []string{"Daten", "bank", "index", "Index", "ab", "ü", "ue", "ß", "日", "本", "カタ", "α", "3", "5",
		"_", "'", ".", ",", ":", "-", "\u0301", "\u200d", "\u00a0", "\u202f", "\u3000", "😀", "«", "»"}
	seps := []string{"", "", "", " ", "\t", "\n", "\r\n"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[rng.IntN(len(pieces))])
		b.WriteString(seps[rng.IntN(len(seps))])
	}
	return b.String()
}

// BenchmarkMatchSpans64k is the snippet work of one 64 KB hit.
func BenchmarkMatchSpans64k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ name, text string }{{"random", searchtest.RandomWords(rng, 64<<10)}, {"prose", searchtest.Prose(rng, 64<<10)}} {
		b.Run(c.name, func(b *testing.B) {
			words := strings.Fields(c.text)
			q := words[7] + " " + words[99] + " Datenbank"
			for b.Loop() {
				NewMarker(q).Spans(c.text)
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
