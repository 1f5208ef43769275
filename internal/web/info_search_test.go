package web

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestInfoHowAHitMatched: the line under a hit says how it matched — the
// search's explanation as it gives it, "by …" read as "found by …", and
// "found by meaning" for a meaning hit without one; nothing for a hit on the
// words as written.
func TestInfoHowAHitMatched(t *testing.T) {
	cases := []struct {
		hit  memory.Hit
		want string
	}{
		{memory.Hit{Match: memory.MatchWords}, ""},
		{memory.Hit{Match: memory.MatchWords, Explanation: "matched 'Datenbank' for 'Datenbnak'"}, "matched 'Datenbank' for 'Datenbnak'"},
		{memory.Hit{Match: memory.MatchWords, Explanation: "parts of 'Fehlerbericht'"}, "parts of 'Fehlerbericht'"},
		{memory.Hit{Match: memory.MatchMeaning, Explanation: "by meaning"}, "found by meaning"},
		{memory.Hit{Match: memory.MatchMeaning}, "found by meaning"},
		{memory.Hit{Match: memory.MatchBoth}, "found by words and meaning"},
	}
	for _, c := range cases {
		if got := howMatched(c.hit); got != c.want {
			t.Errorf("howMatched(%+v) = %q, want %q", c.hit, got, c.want)
		}
	}
}

// TestInfoTypoHitExplained: a typo query finds the entry and the search
// pages show the search's explanation under the hit, as the service gives
// it to agents.
func TestInfoTypoHitExplained(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "Die Datenbank ist SQLite, eine Datei pro Workspace.")
	hits, err := u.env.Svc.Search(context.Background(), memory.NewCaller(u.readKey), ref, memory.SearchQuery{Text: "Datenbnak", Limit: 10})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search Datenbnak: %+v, %v", hits, err)
	}
	want := hits[0].Explanation
	if want == "" {
		// The search's explanations come with issue 26's search work.
		t.Skip("the search gives no explanation for a typo hit yet")
	}
	if !strings.Contains(want, "Datenbank") {
		t.Errorf("explanation %q does not name the word it matched", want)
	}
	b := u.signIn(t, u.reader)
	for _, path := range []string{projPath + "?q=Datenbnak", "/search?q=Datenbnak"} {
		code, body := b.get(path)
		if code != http.StatusOK || !strings.Contains(html.UnescapeString(body), `<p class="match">`+want+`</p>`) {
			t.Errorf("%s: %d, want the hit with <p class=\"match\">%s</p>:\n%s", path, code, want, body)
		}
	}
}

// TestInfoNoHits: a search without hits is an empty state, not a list with
// "Nothing found" in it: a heading naming the query, and suggestions with
// links that drop the tag filter, include expired and superseded entries,
// search all projects (a session with several keys) and show the misses
// in the search log. The same on the search across projects.
func TestInfoNoHits(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.", "db")
	beta, _ := u.newKey(t, ws, "beta", "beta-bot", memory.RoleRead)
	b := u.signIn(t, u.reader)

	code, body := b.get(projPath + "?q=zeppelin&tag=db")
	if code != http.StatusOK {
		t.Fatalf("search: %d", code)
	}
	for _, want := range []string{
		`<h2>No hits for “zeppelin” tagged db</h2>`, "other words", "fewer words",
		`id="no-hits-untag" href="/w/ws/p/proj?q=zeppelin"`,
		`id="no-hits-stale" href="/w/ws/p/proj?q=zeppelin&amp;stale=1&amp;tag=db"`,
		`Agents searching for this would find nothing either`, `href="/w/ws/p/proj/searches?misses=1"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the empty state lacks %s", want)
		}
	}
	for _, bad := range []string{`<ol class="hits"`, "Nothing found", "0 hits", `id="no-hits-all"`} {
		if strings.Contains(body, bad) {
			t.Errorf("the empty state of a one-key session shows %s", bad)
		}
	}
	// Asked with stale entries already, it does not offer them again.
	if _, body = b.get(projPath + "?q=zeppelin&stale=1"); strings.Contains(body, `id="no-hits-stale"`) || strings.Contains(body, `id="no-hits-untag"`) {
		t.Error("the empty state offers a filter that is not set")
	}

	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	if _, body = b.get(projPath + "?q=zeppelin"); !strings.Contains(body, `id="no-hits-all" href="/search?q=zeppelin"`) {
		t.Error("the empty state of a session with two keys offers no search of all projects")
	}
	_, body = b.get("/search?q=zeppelin&tag=db")
	for _, want := range []string{`<h2>No hits for “zeppelin” tagged db in 2 projects</h2>`,
		`id="no-hits-untag" href="/search?q=zeppelin"`, `id="no-hits-stale" href="/search?q=zeppelin&amp;stale=1&amp;tag=db"`,
		`href="/w/ws/p/beta/searches?misses=1"`, `href="/w/ws/p/proj/searches?misses=1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the empty state of /search lacks %s", want)
		}
	}
	if strings.Contains(body, `<ol class="hits"`) || strings.Contains(body, "Nothing found") {
		t.Error("/search shows an empty list of hits")
	}
}

// TestInfoSearchAllStale: the search across projects takes stale=1 as a
// project's search does: a superseded entry is found, and marked, only then.
func TestInfoSearchAllStale(t *testing.T) {
	u := staleWorld(t)
	b := u.signIn(t, u.reader)
	if _, body := b.get("/search?q=old+plan"); strings.Contains(body, "plans/old") {
		t.Error("/search finds a superseded entry without stale=1")
	}
	_, body := b.get("/search?q=old+plan&stale=1")
	if !strings.Contains(body, "plans/old") || !strings.Contains(body, `<span class="mark superseded">superseded</span>`) {
		t.Errorf("/search?stale=1 does not find the superseded entry, marked:\n%s", body)
	}
	if !strings.Contains(body, `id="stale" checked`) {
		t.Error("/search?stale=1 does not keep its checkbox ticked")
	}
}
