package search

import (
	"slices"
	"testing"
)

// TestLinkingElementsJoin: parts in the query find the compound for every
// German linking element, where the modifier as the query spells it (and its
// stems) needs the element added to meet the compound: the join direction
// of TestLinkingElements, one case per element.
func TestLinkingElementsJoin(t *testing.T) {
	for _, c := range []struct{ link, note, query string }{
		{"s", "Ein Sicherheitskonzept liegt vor.", "Konzept für die Sicherheit"},
		{"es", "Die Tagesregeln gelten ab morgen.", "Regeln des Tags"},
		{"n", "Der Bauernhof liegt am See.", "Hof des Bauers"},
		{"n after e", "Das Wochenende naht.", "Ende der Woche"}, // or the stem woch + en
		{"en", "Der Frauenarzt hat Sprechstunde.", "Arzt für die Frau"},
		{"e", "Das Hundefutter ist aus.", "Futter für den Hund"},
		{"er", "Die Kinderhilfe ist wichtig.", "Hilfe für das Kind"},
	} {
		t.Run(c.link, func(t *testing.T) {
			src := newFakeSource()
			src.Put(projA, "target", "Notiz", c.note)
			src.Put(projA, "other", "Anderes", "Hier steht etwas ganz anderes über Wetter.")
			r := newTestRegistry(t, src, Options{})
			if got := slugs(find(t, r, projA, c.query)); !slices.Equal(got, []string{"target"}) {
				t.Errorf("%q in %q (linking %q): %v, want [target]", c.query, c.note, c.link, got)
			}
		})
	}
}
