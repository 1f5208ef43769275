package web

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"munin/internal/memory"
)

// scoreRe matches a raw relevance score as the search pages once showed it
// ("score 0.00"): a sole hit in a small project scored near zero, which
// reads as "no match".
var scoreRe = regexp.MustCompile(`score\s*\d+\.\d+`)

// TestSearchShowsRankNotScore: the search pages (one project and all my
// projects) number their hits and show no raw score, and count hits,
// projects and entries with the right plural.
func TestSearchShowsRankNotScore(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "runbooks/backup", "# Nightly backup\n\nThe backup job copies every workspace file at 02:00.")
	b := u.signIn(t, u.reader)

	pages := []struct {
		name, path string
		want       []string
	}{
		{"project", projPath + "?q=backup", []string{"1 hit for", `<span id="entry-count">1</span> entry ·`}},
		{"all my projects", "/search?q=backup", []string{"1 hit for", "in 1 project</h2>"}},
	}
	for _, p := range pages {
		code, body := b.get(p.path)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d %s", p.name, code, errorText(body))
		}
		if n := strings.Count(body, `class="hit"`); n != 1 {
			t.Fatalf("%s: %d hits, want 1", p.name, n)
		}
		for _, w := range p.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: page lacks %q", p.name, w)
			}
		}
		if strings.Contains(body, "1 hits") || strings.Contains(body, "1 projects") || strings.Contains(body, "1 entries") {
			t.Errorf("%s: a count of 1 with a plural noun", p.name)
		}
		if m := scoreRe.FindString(body); m != "" {
			t.Errorf("%s: page shows a raw score %q", p.name, m)
		}
		// The rank: hits are an ordered list, numbered 1., 2., … by the browser.
		if !strings.Contains(body, `<ol class="hits" id="hits">`) {
			t.Errorf("%s: hits are not an ordered (ranked) list", p.name)
		}
	}

	// Plurals for more than one: two hits, two projects, two entries.
	u.remember(t, u.writerKey, "incidents/disk", "# Disk full\n\nThe backup filled the disk of the build host.")
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleWrite)
	u.remember(t, betaKey, "notes/other", "nothing about it")
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	_, body := b.get("/search?q=backup")
	if !strings.Contains(body, "2 hits for") || !strings.Contains(body, "in 2 projects</h2>") {
		t.Errorf("search all with 2 hits in 2 projects: heading is %q", heading(body))
	}
	_, body = b.get(projPath)
	if !strings.Contains(body, `<span id="entry-count">2</span> entries ·`) || !strings.Contains(body, "· 2 entries</span>") {
		t.Error("project page with 2 entries does not say \"2 entries\"")
	}
	_, body = b.get(projPath + "?q=zeppelin")
	if !strings.Contains(body, "No hits for “zeppelin”") {
		t.Errorf("no hits: heading is %q", heading(body))
	}
}

// heading returns the first <h2> of a page, for failure messages.
func heading(body string) string {
	i := strings.Index(body, "<h2>")
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, "</h2>"); j >= 0 {
		return rest[:j+5]
	}
	return rest
}
