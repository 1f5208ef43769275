package search

import (
	"slices"
	"testing"
)

// A compound part may be as short as minPartRunes (three letters): a
// three-letter head (Fehlerlog → fehler + log) and a three-letter modifier
// (Bugliste → bug + liste; Log-Datei → logdatei) split, and join again from
// the words apart.
// Each note is found by the other spelling only, so the test fails if
// three-letter parts are dropped from splits or joins.
func TestThreeLetterCompoundParts(t *testing.T) {
	for _, c := range []struct{ note, query string }{
		{"Das Log mit dem Fehler vom Import ist voll.", "Fehlerlog"}, // split, head of three letters
		{"Der Fehlerlog vom Import ist voll.", "Log der Fehler"},     // join, head of three letters
		{"Die Liste der offenen Bugs wächst.", "Bugliste"},           // split, modifier of three letters
		{"Die Bugliste wächst.", "Liste der Bugs"},                   // join, modifier stemmed to three letters
		{"Die Logdatei vom Import ist voll.", "Log-Datei"},           // join, modifier of three letters as written
	} {
		src := newFakeSource()
		src.Put(projA, "target", "Notiz", c.note)
		src.Put(projA, "other", "Anderes", "Hier steht etwas ganz anderes über Wetter.")
		r := newTestRegistry(t, src, Options{})
		if got := slugs(find(t, r, projA, c.query)); !slices.Equal(got, []string{"target"}) {
			t.Errorf("%q in %q: %v, want [target]", c.query, c.note, got)
		}
	}
	// Shorter parts never split: "ablauf" is no compound of "ab" and
	// "lauf", even when both are known words.
	src := newFakeSource()
	src.Put(projA, "parts", "Notiz", "Ab morgen Lauf im Park.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "Ablauf")); len(got) != 0 {
		t.Errorf("Ablauf split into two-letter parts: %v", got)
	}
}
