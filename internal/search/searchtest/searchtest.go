// Package searchtest holds the made-up words and corpora that the tests and
// benchmarks of the search packages share (internal/search and its
// subpackages), so that each package's tests run alone on the same text.
// Only tests import it.
package searchtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// BenchWords are common words of team notes, in English and German.
var BenchWords = strings.Fields(`the index database decision we chose because latency throughput
replication backup restore cluster deploy rollout agent memory search query cache invalidation
die Datenbank Entscheidung wir haben weil Latenz Durchsatz Sicherung Wiederherstellung Bereitstellung
Speicher Suche Abfrage Zwischenspeicher und oder nicht mit für über unter Server Konfiguration
Migration Schema Tabelle Spalte Index Protokoll Schlüssel Projekt Arbeitsbereich Version`)

// RandomWords returns n bytes of random lower-case words of 3 to 10 letters.
func RandomWords(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		for range 3 + rng.IntN(8) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// proseVocab is a vocabulary of 20,000 words: the bench words first (the most
// frequent), then made-up words of syllables, so frequencies follow Zipf's
// law as in real text, in English and German.
var proseVocab = func() []string {
	rng := rand.New(rand.NewPCG(7, 7))
	syl := strings.Fields("ka te ri on da ber ung en sch ver ion al in pro ma lo ti ne re st ge an")
	seen := map[string]bool{}
	out := append([]string(nil), BenchWords...)
	for len(out) < 20_000 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

// Prose returns about n bytes of sentences over proseVocab.
func Prose(rng *rand.Rand, n int) string {
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(proseVocab)-1))
	var b strings.Builder
	for b.Len() < n {
		words := 6 + rng.IntN(14)
		for i := range words {
			w := proseVocab[zipf.Uint64()]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if i < words-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
		if rng.IntN(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// Fill writes n realistic entries with put: a title, ~500 bytes of mixed
// English/German content and 2-3 tags, the same ones on every call.
func Fill(put func(slug, title, content string, tags ...string), n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	tags := []string{"db", "infra", "adr", "ops", "team:core", "bug", "idee", "api"}
	pick := func() string { return BenchWords[rng.IntN(len(BenchWords))] }
	for i := range n {
		var b strings.Builder
		for b.Len() < 500 {
			b.WriteString(pick())
			b.WriteByte(' ')
		}
		tt := []string{tags[rng.IntN(len(tags))], tags[rng.IntN(len(tags))]}
		if i%2 == 0 {
			tt = append(tt, tags[rng.IntN(len(tags))])
		}
		put(fmt.Sprintf("notes/entry-%05d", i), pick()+" "+pick()+" "+pick(), b.String(), tt...)
	}
}
