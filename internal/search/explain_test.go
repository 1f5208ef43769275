package search

import (
	"fmt"
	"strings"
	"testing"

	"munin/internal/memory"
)

// explanations is "slug: explanation" per hit, in order.
func explanations(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Slug + ": " + h.Explanation
	}
	return out
}

// explainedRegistry holds notes that a typo, a compound's parts and a join
// find, and notes on the words as written.
func explainedRegistry(t *testing.T) *Registry {
	t.Helper()
	src := newFakeSource()
	src.Put(projA, "db", "Datenbank", "Wir nutzen eine **Datenbank** für alle Projekte.")
	src.Put(projA, "weather", "Wetter", "Es regnet den ganzen Tag.")
	src.Put(projA, "split-joined", "Fehlerbericht", "Der Fehlerbericht zum Import liegt im Wiki.")
	src.Put(projA, "split-apart", "Import", "Ein Bericht über den Fehler beim nächtlichen Import.")
	src.Put(projA, "join-joined", "Oktober", "Der Releaseplan für Oktober steht.")
	src.Put(projA, "join-hyphen", "Termine", "Der Release-Plan ist abgestimmt.")
	return newTestRegistry(t, src, Options{})
}

// TestExplanationSaysHowAHitMatched: a hit found by a typo's correction, by
// a compound's parts or by query words joined into a compound says so, with
// the entry's words and the query's as written, and its snippet marks the
// entry's word; a hit on the words as written says nothing.
func TestExplanationSaysHowAHitMatched(t *testing.T) {
	r := explainedRegistry(t)
	checkExplanations(t, r, []explainCase{
		{"Datenbnak", []string{"db: matched 'Datenbank' for 'Datenbnak'"}, "Wir nutzen eine «Datenbank» für alle Projekte."},
		{"Datenbank", []string{"db: "}, "Wir nutzen eine «Datenbank» für alle Projekte."},
		// Datenbank is as written, Wettr's correction only adds to db's
		// score; weather holds the correction alone (tier 2).
		{"Datenbank Wettr", []string{"db: ", "weather: matched 'Wetter' for 'Wettr'"}, "Es regnet den ganzen Tag."},
		{"Fehlerbericht", []string{"split-joined: ", "split-apart: parts of 'Fehlerbericht': Fehler, Bericht"},
			"Ein «Bericht» über den «Fehler» beim nächtlichen Import."},
		{"Plan Release", []string{"join-hyphen: ", "join-joined: 'Releaseplan' for 'Plan Release'"},
			"Der «Releaseplan» für Oktober steht."},
	})
	// Search, one project's view, explains alike.
	if hits := find(t, r, projA, "Datenbnak"); len(hits) != 1 || hits[0].Explanation != "matched 'Datenbank' for 'Datenbnak'" {
		t.Errorf("Search: %q", explanations(hits))
	}
}

// TestExplanationAcrossProjects: a recall over several projects explains
// each hit as its tier found it, whichever project holds it.
func TestExplanationAcrossProjects(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "weather", "Notiz", "Das Wetter heute.")
	src.Put(projB, "db", "Notiz", "Die Datenbank läuft.")
	src.Put(projB, "bericht", "Notiz", "Ein Bericht über den Fehler.")
	r := newTestRegistry(t, src, Options{})
	hits := searchAll(t, r, []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "Wetter Datenbnak"})
	if got, want := explanations(hits), []string{"weather: ", "db: matched 'Datenbank' for 'Datenbnak'"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Wetter Datenbnak: %q, want %q", got, want)
	}
	hits = searchAll(t, r, []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "Fehlerbericht"})
	if got, want := explanations(hits), []string{"bericht: parts of 'Fehlerbericht': Fehler, Bericht"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Fehlerbericht: %q, want %q", got, want)
	}
	if len(hits) == 1 && hits[0].Project != projB {
		t.Errorf("hit from %v, want %v", hits[0].Project, projB)
	}
}

// TestExplanationByMeaning: a hit only the meaning path found says "by
// meaning"; one the words found too says nothing.
func TestExplanationByMeaning(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	hits := g.recall(t, []memory.ProjectRef{projA}, backupQuery)
	if got, want := explanations(hits), []string{"ops/backups: by meaning"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%q: %q, want %q", backupQuery, got, want)
	}
	hits = g.recall(t, []memory.ProjectRef{projA}, "nightly backups")
	if got, want := explanations(hits), []string{"ops/backups: "}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("nightly backups: %q, want %q", got, want)
	}
}

// TestExplanationIsShort: several alternatives matched are joined while the
// explanation stays within maxExplanationRunes; the first is always there.
func TestExplanationIsShort(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "both", "Notiz", "Ein Bericht über den Fehler; die Umgebung für Tests; der Plan.")
	r := newTestRegistry(t, src, Options{})
	hits := searchAll(t, r, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "Fehlerbericht Testumgebung"})
	if len(hits) != 1 {
		t.Fatalf("hits %q", explanations(hits))
	}
	got := hits[0].Explanation
	if !strings.HasPrefix(got, "parts of 'Fehlerbericht': Fehler, Bericht") || len([]rune(got)) > maxExplanationRunes {
		t.Errorf("explanation %q: want the first alternative, at most %d runes", got, maxExplanationRunes)
	}
}

// TestExplanationOfModifierForms: a compound met through a modifier in
// another form says what stood in for the query's words: a modifier known
// only inside other compounds (Wartungsvertrag for the Wartungs- of
// Wartungskalender), the stem of an -ung noun (Zustellquote: Zustellung),
// an -ung noun or a verb joined as a modifier (Kosten der Speicherung,
// Leistung beim Lesen). The joined compound ranks above an entry holding
// one of the two words only.
func TestExplanationOfModifierForms(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "prefix", "Betrieb", "Der Wartungsvertrag gilt bis 2027; wann welcher Server dran ist, zeigt der Kalender.")
	src.Put(projA, "ung-split", "Benachrichtigungen", "Die Quote der Zustellung lag bei 99,7 %.")
	src.Put(projA, "ung-join", "Anhänge", "Die Speicherkosten sinken auf ein Drittel.")
	src.Put(projA, "verb-join", "Objektspeicher", "Die Leseleistung reicht für Anhänge.")
	src.Put(projA, "one-word", "Budget", "Die Kosten der Server tragen wir; die Leistung der Server prüfen wir monatlich.")
	r := newTestRegistry(t, src, Options{})
	checkExplanations(t, r, []explainCase{
		{"Wartungskalender", []string{"prefix: parts of 'Wartungskalender': Wartungsvertrag, Kalender"},
			"Der «Wartungsvertrag» gilt bis 2027; wann welcher Server dran ist, zeigt der «Kalender»."},
		{"Zustellquote", []string{"ung-split: parts of 'Zustellquote': Zustellung, Quote"},
			"Die «Quote» der «Zustellung» lag bei 99,7 %."},
		{"Kosten der Speicherung", []string{"ung-join: 'Speicherkosten' for 'Kosten Speicherung'", "one-word: "},
			"Die «Speicherkosten» sinken auf ein Drittel."},
		{"Leistung beim Lesen", []string{"verb-join: 'Leseleistung' for 'Leistung Lesen'", "one-word: "},
			"Die «Leseleistung» reicht für Anhänge."},
	})
}

// explainCase is a query of projA and the explanations of its hits.
type explainCase struct {
	query   string
	want    []string // slug: explanation, in order
	snippet string   // of the last hit with an explanation, else of the last hit
}

// checkExplanations recalls each case's query from r and checks the
// explanations and the snippet.
func checkExplanations(t *testing.T, r *Registry, cases []explainCase) {
	t.Helper()
	for _, c := range cases {
		hits := searchAll(t, r, []memory.ProjectRef{projA}, memory.SearchQuery{Text: c.query})
		if got := explanations(hits); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %q, want %q", c.query, got, c.want)
			continue
		}
		h := hits[len(hits)-1]
		for _, x := range hits {
			if x.Explanation != "" {
				h = x
			}
		}
		if h.Snippet != c.snippet {
			t.Errorf("%q: snippet %q, want %q", c.query, h.Snippet, c.snippet)
		}
	}
}
