package web

import (
	"strings"
	"testing"

	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestSearchSaysFoundByMeaning: with meaning search on, a hit found by
// meaning says so on the search pages (its snippet may hold none of the
// query's words); a hit found by its words alone says nothing extra.
func TestSearchSaysFoundByMeaning(t *testing.T) {
	emb := servicetest.ConceptEmbedder{{"backups", "nightly", "snapshots", "offsite", "disk", "dies", "safe", "data"}}
	u := newUIOn(t, servicetest.NewMeaning(t, service.Options{}, emb))
	u.remember(t, u.writerKey, "ops/backups", "Nightly backups: snapshots are copied offsite.")
	u.remember(t, u.writerKey, "ops/vendor", "Order spare parts from the vendor portal.")
	b := u.signIn(t, u.reader)
	for _, path := range []string{"/search?q=keep+data+safe+if+the+disk+dies", "/w/ws/p/proj?q=keep+data+safe+if+the+disk+dies"} {
		code, body := b.get(path)
		if code != 200 || !strings.Contains(body, "ops/backups") || !strings.Contains(body, "found by meaning") {
			t.Errorf("%s: %d, want ops/backups found by meaning:\n%s", path, code, body)
		}
	}
	if _, body := b.get("/search?q=vendor+portal"); !strings.Contains(body, "ops/vendor") || strings.Contains(body, "found by") {
		t.Errorf("a words hit: want it without a match label:\n%s", body)
	}
}
