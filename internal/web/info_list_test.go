package web

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// entryRowRe captures one row of the entry list: the slug and the agent cell.
var entryRowRe = regexp.MustCompile(`(?s)<td class="slug">([^<]+)</td>.*?<td class="agent">([^<]*)</td>`)

// TestInfoEntryListAgentAndTagFilter: the entry list names the agent of
// each entry's latest version, and offers a labelled tag filter listing the
// tags on the page, which narrows the list by ?tag=.
func TestInfoEntryListAgentAndTagFilter(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.", "db", "storage")
	u.remember(t, u.adminKey, "decisions/db", "We use SQLite in WAL mode.", "db", "storage")
	u.remember(t, u.writerKey, "notes/other", "Something else.", "misc")
	b := u.signIn(t, u.reader)

	code, body := b.get(projPath)
	if code != http.StatusOK {
		t.Fatalf("project page: %d", code)
	}
	if !strings.Contains(body, "<th>Agent</th>") {
		t.Error("the entry list has no Agent column")
	}
	agents := map[string]string{}
	for _, m := range entryRowRe.FindAllStringSubmatch(body, -1) {
		agents[m[1]] = m[2]
	}
	// decisions/db: alice wrote version 1, root the latest.
	if agents["decisions/db"] != "root" || agents["notes/other"] != "alice" {
		t.Errorf("agents per entry %v, want decisions/db by root, notes/other by alice", agents)
	}
	for _, want := range []string{`<label for="tag-input">Tag</label>`, `id="tag-input" list="tag-options"`,
		`<option value="db"></option>`, `<option value="misc"></option>`, `<option value="storage"></option>`, `id="tag-filter-btn"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the tag filter lacks %s", want)
		}
	}
	// The existing tag links stay.
	if !strings.Contains(body, `<a class="tag" href="/w/ws/p/proj?sort=updated&amp;tag=misc">misc</a>`) {
		t.Error("the tag links of the rows are gone")
	}

	// The filter form submits ?tag=.
	_, body = b.get(projPath + "?tag=misc")
	if n := strings.Count(body, `class="entry-row`); n != 1 || !strings.Contains(body, "notes/other") {
		t.Errorf("?tag=misc lists %d entries, want notes/other alone", n)
	}
	if !strings.Contains(html.UnescapeString(body), `id="tag-input" list="tag-options" value="misc"`) {
		t.Error("the tag filter does not show the tag filtered by")
	}
}

// TestInfoCheckboxBesideLabel: the search bar's checkbox is inside its
// label (beside its text, as the CSS lays it out) and the label names it.
func TestInfoCheckboxBesideLabel(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.reader)
	for _, path := range []string{projPath, "/search"} {
		_, body := b.get(path)
		if !strings.Contains(body, `<label class="inline-check" for="stale"><input type="checkbox" name="stale" value="1" id="stale"> <span>also expired and superseded</span></label>`) {
			t.Errorf("%s: the stale checkbox is not inside its label", path)
		}
	}
}
