package rank

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/search/text"
)

// TestTyposKnowAbsentTranspositions: typos skips the dictionary lookup of a
// transposition fuzzy did not list when fuzzy listed every near term
// (typos.go). With and without the skip it corrects alike, and leaves the
// vocabulary with the same known terms and lookups counted (they bound the
// expansions that follow): over the load test's words and typos, and over a
// vocabulary with more near terms than one fuzzy lookup lists, where the
// transpositions are looked up.
func TestTyposKnowAbsentTranspositions(t *testing.T) {
	domain := "Datenbank Schnittstelle Sicherung Migration Zugriff Leistung Protokoll Speicher Datenbanken"
	var crowd []string // 56 terms one edit from "portokoll", before its transposition "protokoll" in term order
	for _, c := range "abcdefghijklmnopqrstuvwxyzäöü" {
		for _, w := range []string{"por" + string(c) + "okoll", "po" + string(c) + "tokoll"} {
			if w != "portokoll" {
				crowd = append(crowd, w)
			}
		}
	}
	queries := []string{"datenbnak", "schnitstelle", "sicherugn", "migraton", "zugrif", "leistnug", "portokoll", "speichre",
		"Datenbankschnittstelle", "Bericht über den Fehler", "protoklol rpotokoll", "datenbank"}
	for _, c := range []struct {
		name     string
		contents []string
	}{
		{"domain", []string{domain, "Neustart des Servers und Datenbnak-Sicherung"}},
		{"crowded", []string{domain, strings.Join(crowd, " ")}},
	} {
		idx := indexOf(t, c.contents...)
		for _, q := range queries {
			words := text.Analyze(q).Seq
			run := func(skip bool) ([]alt, map[string]bool, int) {
				defer func(old bool) { skipListedAbsent = old }(skipListedAbsent)
				skipListedAbsent = skip
				forgetMemos()
				v := newVocab(testCtx(t), []bleve.Index{idx})
				defer v.close()
				return typos(words, v), maps.Clone(v.known), v.lookups
			}
			got, gotKnown, gotLookups := run(true)
			want, wantKnown, wantLookups := run(false)
			if !slices.EqualFunc(got, want, func(a, b alt) bool { return a.word == b.word && slices.Equal(a.known, b.known) }) {
				t.Errorf("%s: typos(%q) = %+v, looking every transposition up %+v", c.name, q, got, want)
			}
			if !maps.Equal(gotKnown, wantKnown) || gotLookups != wantLookups {
				t.Errorf("%s: typos(%q) left %d lookups, known %v; looking every transposition up %d, %v", c.name, q, gotLookups, gotKnown, wantLookups, wantKnown)
			}
		}
	}
}
