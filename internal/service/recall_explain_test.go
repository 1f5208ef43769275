package service_test

import (
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestRecallExplainsHowHitsMatched: a recall hit found by a typo's
// correction or by a compound's parts carries its explanation through the
// service (and across the cluster hop: MUNIN_SERVICETEST_REMOTE=1), in
// Recall's hits and in Search's (the web UI's); a hit on the words as
// written carries none.
func TestRecallExplainsHowHitsMatched(t *testing.T) {
	env := servicetest.New(t, service.Options{RecallRate: -1})
	w := env.Caller(t, keyOf(t, env, "acme/a", "writer", memory.RoleWrite))
	remember(t, env, w, "", "notes/db", "Wir nutzen eine **Datenbank** für alle Projekte.")
	remember(t, env, w, "", "notes/report", "Ein Bericht über den Fehler beim Import.")
	for _, c := range []struct{ query, slug, want, snippet string }{
		{"Datenbnak", "notes/db", "matched 'Datenbank' for 'Datenbnak'", "Wir nutzen eine «Datenbank» für alle Projekte."},
		{"Fehlerbericht", "notes/report", "parts of 'Fehlerbericht': Fehler, Bericht", "Ein «Bericht» über den «Fehler» beim Import."},
		{"Datenbank", "notes/db", "", "Wir nutzen eine «Datenbank» für alle Projekte."},
	} {
		res, err := env.Svc.Recall(ctx, w, service.RecallRequest{Query: c.query})
		if err != nil {
			t.Fatalf("recall %q: %v", c.query, err)
		}
		if len(res.Hits) != 1 || res.Hits[0].Slug != c.slug || res.Hits[0].Explanation != c.want || res.Hits[0].Snippet != c.snippet {
			t.Errorf("recall %q: %+v, want %s explained %q with snippet %q", c.query, res.Hits, c.slug, c.want, c.snippet)
		}
		hits, err := env.Svc.Search(ctx, w, memory.ProjectRef{}, memory.SearchQuery{Text: c.query})
		if err != nil {
			t.Fatalf("search %q: %v", c.query, err)
		}
		if len(hits) != 1 || hits[0].Explanation != c.want {
			t.Errorf("search %q: %+v, want %s explained %q", c.query, hits, c.slug, c.want)
		}
	}
}
