package search

import (
	"fmt"
	"slices"
	"testing"

	"munin/internal/memory"
)

// compoundNotes are team notes that spell a compound one way; compoundCases
// search them the other way.
var compoundNotes = map[string][2]string{
	"fehler-joined":    {"Fehlerbericht", "Der Fehlerbericht zum Import liegt im Wiki."},
	"fehler-apart":     {"Import", "Ein Bericht über den Fehler beim nächtlichen Import."},
	"kunde-joined":     {"Kundenwunsch", "Ein Kundenwunsch: Export als CSV."},
	"kunde-apart":      {"Export", "Wünsche der Kunden zum Export sammeln wir hier."},
	"test-joined":      {"Testumgebung", "Die Testumgebung läuft auf dem alten Rechner."},
	"test-apart":       {"Rechner", "Die Umgebung für Tests läuft auf dem alten Rechner."},
	"release-joined":   {"Releaseplan", "Der Releaseplan für Oktober steht."},
	"release-hyphen":   {"Oktober", "Der Release-Plan für Oktober ist abgestimmt."},
	"release-apart":    {"Termine", "Der Plan für das Release im Oktober steht fest."},
	"neustart-joined":  {"Wartung", "Der Serverneustart ist für Sonntag geplant."},
	"neustart-apart":   {"Sonntag", "Neustart des Servers am Sonntag um drei."},
	"unrelated-server": {"Server", "Der Server hat zu wenig Speicher."},
}

var compoundCases = []struct {
	query string
	want  []string // every one must be found
}{
	{"Fehlerbericht", []string{"fehler-joined", "fehler-apart"}},
	{"Bericht über den Fehler", []string{"fehler-apart", "fehler-joined"}},
	{"Kundenwunsch", []string{"kunde-joined", "kunde-apart"}},
	{"Wünsche der Kunden", []string{"kunde-apart", "kunde-joined"}},
	{"Testumgebung", []string{"test-joined", "test-apart"}},
	{"Umgebung für Tests", []string{"test-apart", "test-joined"}},
	{"Releaseplan", []string{"release-joined", "release-hyphen", "release-apart"}},
	{"Release-Plan", []string{"release-hyphen", "release-apart", "release-joined"}},
	{"Plan für das Release", []string{"release-apart", "release-hyphen", "release-joined"}},
	{"Serverneustart", []string{"neustart-joined", "neustart-apart"}},
	{"Neustart des Servers", []string{"neustart-apart", "neustart-joined"}},
}

func compoundRegistry(t *testing.T, opts Options) *Registry {
	t.Helper()
	src := newFakeSource()
	for slug, n := range compoundNotes {
		src.Put(projA, slug, n[0], n[1])
	}
	return newTestRegistry(t, src, opts)
}

// TestCompoundsBothWays: a compound in the query finds notes spelling its
// parts apart or hyphenated, and the parts find the compound (the issue's
// examples).
func TestCompoundsBothWays(t *testing.T) {
	r := compoundRegistry(t, Options{})
	for _, c := range compoundCases {
		got := slugs(find(t, r, projA, c.query))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: hits %v, missing %s", c.query, got, w)
			}
		}
		if slices.Contains(got, "unrelated-server") && c.query != "Serverneustart" && c.query != "Neustart des Servers" {
			t.Errorf("%q: hits %v include an unrelated note", c.query, got)
		}
	}
}

// TestCompoundsOffFindWordsOnly: with the expansions off, recall is what it
// was: the compound finds only its own spelling (this is also what the test
// above measures against).
func TestCompoundsOffFindWordsOnly(t *testing.T) {
	r := compoundRegistry(t, Options{NoCompounds: true, NoTypos: true})
	if got := slugs(find(t, r, projA, "Fehlerbericht")); !slices.Equal(got, []string{"fehler-joined"}) {
		t.Fatalf("Fehlerbericht with compounds off: %v, want [fehler-joined]", got)
	}
}

// TestWholeWordOutranksParts: an entry holding the compound as written ranks
// above entries holding its parts, even when those repeat the parts in
// title and content (a higher score by the parts alone); and entries holding
// the parts as written rank above the one holding only the compound.
func TestWholeWordOutranksParts(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "whole", "Notiz", "Im Wiki steht ein langer Text; weiter unten der Fehlerbericht.")
	src.Put(projA, "parts", "Fehler Bericht Fehler", "Bericht über den Fehler, Bericht zum Fehler, Fehler im Bericht.")
	src.Put(projA, "other", "Fehler", "Nur ein Fehler ohne Bericht? Nein: ohne das andere Wort.")
	r := newTestRegistry(t, src, Options{})
	got := find(t, r, projA, "Fehlerbericht")
	if s := slugs(got); len(s) < 2 || s[0] != "whole" || s[1] != "parts" {
		t.Fatalf("Fehlerbericht: %v, want [whole parts …]", describe(got))
	}
	if got[1].Score > got[0].Score {
		t.Errorf("part match scores %v above the whole word's %v", got[1].Score, got[0].Score)
	}
	got = find(t, r, projA, "Bericht Fehler")
	if s := slugs(got); len(s) != 3 || s[len(s)-1] != "whole" {
		t.Fatalf("Bericht Fehler: %v, want the compound-only entry last", describe(got))
	}
}

// TestCompoundSplitNeedsEveryPart: a split matches only entries holding all
// its parts; one part alone is no match.
func TestCompoundSplitNeedsEveryPart(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "both", "Notiz", "Ein Bericht über den Fehler.")
	src.Put(projA, "one", "Notiz", "Ein Bericht über das Wetter.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "Fehlerbericht")); !slices.Equal(got, []string{"both"}) {
		t.Fatalf("Fehlerbericht: %v, want [both]", got)
	}
}

// TestLinkingElements: each German linking element is dropped from the
// modifier when the query splits, and added when it joins.
func TestLinkingElements(t *testing.T) {
	for _, c := range []struct{ note, query string }{
		{"Das Konzept zur Sicherheit ist fertig.", "Sicherheitskonzept"},    // s
		{"Die Regeln des Tages gelten.", "Tagesregeln"},                     // es
		{"Die Liste der Kunden ist lang.", "Kundenliste"},                   // n
		{"Das Ende der Woche naht.", "Wochenende"},                          // n after e
		{"Die Wartung der Hunde kostet.", "Hundewartung"},                   // e
		{"Die Hilfe für Kinder ist wichtig.", "Kinderhilfe"},                // er (plural form)
		{"Ein Sicherheitskonzept liegt vor.", "Konzept für die Sicherheit"}, // join with s
		{"Die Kundenliste ist lang.", "Liste der Kunden"},                   // join with n
		{"Die Tagesregeln gelten.", "Regeln des Tages"},                     // join, modifier as written
	} {
		src := newFakeSource()
		src.Put(projA, "target", "Notiz", c.note)
		src.Put(projA, "other", "Anderes", "Hier steht etwas ganz anderes über Wetter.")
		r := newTestRegistry(t, src, Options{})
		if got := slugs(find(t, r, projA, c.query)); !slices.Equal(got, []string{"target"}) {
			t.Errorf("%q in %q: %v, want [target]", c.query, c.note, got)
		}
	}
}

// TestCompoundsAcrossProjects: compound hits over several projects score as
// one index holding them all would, and the parts may come from different
// projects' vocabularies.
func TestCompoundsAcrossProjects(t *testing.T) {
	union := memory.ProjectRef{Workspace: "ws", Project: "union"}
	src := newFakeSource()
	i := 0
	for slug, n := range compoundNotes {
		ref := projA
		if i%2 == 1 {
			ref = projB
		}
		i++
		src.Put(ref, slug, n[0], n[1])
		src.Put(union, slug, n[0], n[1])
	}
	for j := range 40 { // filler, so the projects' statistics differ
		src.Put(projB, fmt.Sprintf("filler-%d", j), "Notiz", filler(j, 10)+" Server Plan")
		src.Put(union, fmt.Sprintf("filler-%d", j), "Notiz", filler(j, 10)+" Server Plan")
	}
	r := newTestRegistry(t, src, Options{})
	for _, c := range compoundCases {
		q := memory.SearchQuery{Text: c.query, Limit: MaxLimit}
		got := searchAll(t, r, []memory.ProjectRef{projA, projB}, q)
		want, err := r.Search(testCtx(t), union, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %v over two projects, %v in one index", c.query, describe(got), describe(want))
		}
		byslug := map[string]float64{}
		for _, h := range want {
			byslug[h.Slug] = h.Score
		}
		for k, h := range got { // equal scores may come in another order
			if s, ok := byslug[h.Slug]; !near(h.Score, want[k].Score) || (ok && !near(h.Score, s)) {
				t.Errorf("%q: hit %d is %s=%v over two projects, %s=%v in one index", c.query, k, h.Slug, h.Score, want[k].Slug, want[k].Score)
			}
		}
		for _, w := range c.want {
			if !slices.Contains(slugs(got), w) {
				t.Errorf("%q over two projects: %v, missing %s", c.query, slugs(got), w)
			}
		}
	}
}

// TestThreePartCompound: a compound of three words finds them apart, with
// a linking element between the second and third.
func TestThreePartCompound(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "apart", "Notiz", "Das Skript für die Migration der Datenbank läuft nachts.")
	src.Put(projA, "two", "Notiz", "Die Migration der Datenbank ist geplant.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "Datenbankmigrationsskript")); !slices.Equal(got, []string{"apart"}) {
		t.Fatalf("Datenbankmigrationsskript: %v, want [apart]", got)
	}
}
