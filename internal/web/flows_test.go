package web

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The forgotten page joins the route tables of roles_test.go and
// routes_test.go, so the role tests and the parameter walk cover it.
func init() {
	projectRoutes = append(projectRoutes, webRoute{"GET", "/w/{ws}/p/{p}/forgotten", readsEntries,
		func(tg target) string { return tg.proj() + "/forgotten" }, nil})
	routeParams = append(routeParams, struct {
		path   string
		params []string
	}{projPath + "/forgotten", []string{"page"}})
}

var (
	expectedRe     = regexp.MustCompile(`name="expected_version" value="(\d+)"`)
	expectedSlugRe = regexp.MustCompile(`name="expected_slug" value="([^"]*)"`)
)

// elementText is the unescaped text of the element with this id in body,
// up to its first child element ("" when there is none).
func elementText(body, id string) string {
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*>([^<]*)`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// formField returns the first submatch of re in body, or fails.
func formField(t *testing.T, body string, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in the page:\n%s", re, errorText(body))
	}
	return m[1]
}

// TestEditConflictCarriesCurrentVersion: a save on a stale form shows base,
// theirs and yours, writes nothing, and the form it shows expects the
// version shown as theirs, so saving the merge succeeds; a write that lands
// meanwhile conflicts again, with the newer theirs.
func TestEditConflictCarriesCurrentVersion(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.\nOne writer.\n", "db")
	b := u.signIn(t, u.writer)
	_, form := b.get(projPath + "/edit/decisions/db")
	if got := formField(t, form, expectedRe); got != "1" {
		t.Fatalf("edit form expects version %s, want 1", got)
	}
	u.remember(t, u.adminKey, "decisions/db", "We use SQLite in WAL mode.\nOne writer.\n", "db")

	save := func(content, expected string) (int, string) {
		t.Helper()
		return b.post(projPath+"/save", url.Values{"slug": {"decisions/db"}, "is_new": {"0"}, "tags": {"db"},
			"content": {content}, "expected_version": {expected}, "expected_slug": {"decisions/db"}})
	}
	code, body := save("We use SQLite.\nOne writer, group commit.\n", "1")
	if code != http.StatusConflict {
		t.Fatalf("stale save: %d %s, want 409", code, errorText(body))
	}
	if n := u.versions(t, "decisions/db"); n != 2 {
		t.Fatalf("a conflict wrote: %d versions, want 2", n)
	}
	for id, want := range map[string]string{
		"text-base":   "We use SQLite.\nOne writer.\n",
		"text-theirs": "We use SQLite in WAL mode.\nOne writer.\n",
		"text-yours":  "We use SQLite.\nOne writer, group commit.\n",
	} {
		if got := elementText(body, id); got != want {
			t.Errorf("#%s reads %q, want %q", id, got, want)
		}
	}
	page := html.UnescapeString(body)
	for _, want := range []string{
		`id="theirs-agent">root<`,
		`<tr class="add">`, // the diff base→theirs
		"One writer, group commit.\n</textarea>",
		"Saving writes version 3",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("conflict page lacks %q", want)
		}
	}
	expected := formField(t, body, expectedRe)
	if expected != "2" {
		t.Fatalf("after the conflict the form expects version %s, want the current 2", expected)
	}

	// Someone writes again before the merge is saved: conflict again, newer theirs.
	u.remember(t, u.adminKey, "decisions/db", "We use SQLite in WAL mode.\nOne writer.\nBackups nightly.\n", "db")
	code, body = save("merged once", expected)
	if code != http.StatusConflict || formField(t, body, expectedRe) != "3" || !strings.Contains(body, "Backups nightly.") {
		t.Fatalf("second stale save: %d, expects %s, want 409 expecting 3 with the newer theirs", code, formField(t, body, expectedRe))
	}
	if n := u.versions(t, "decisions/db"); n != 3 {
		t.Fatalf("the second conflict wrote: %d versions, want 3", n)
	}

	merged := "We use SQLite in WAL mode.\nOne writer, group commit.\nBackups nightly.\n"
	if code, body = save(merged, formField(t, body, expectedRe)); code != http.StatusSeeOther {
		t.Fatalf("saving the merge: %d %s, want 303", code, errorText(body))
	}
	got, err := u.get(u.writerKey, "decisions/db")
	if err != nil || got.Version != 4 || got.Content != merged || got.Agent != "alice" {
		t.Fatalf("after the merge: v%d by %s %q (%v), want v4 by alice with the merge", got.Version, got.Agent, got.Content, err)
	}
}

// TestNewEntryConflict: "new entry" on a slug that exists is a conflict
// showing the existing entry; saving then writes its next version, and
// changing the slug instead creates a new entry.
func TestNewEntryConflict(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.adminKey, "people/ada", "Ada owns storage.")
	b := u.signIn(t, u.writer)
	create := func(slug, content, expected, expectedSlug string) (int, string) {
		t.Helper()
		return b.post(projPath+"/save", url.Values{"slug": {slug}, "is_new": {"1"}, "content": {content},
			"expected_version": {expected}, "expected_slug": {expectedSlug}})
	}
	code, body := create("people/ada", "Ada owns search.", "0", "")
	if code != http.StatusConflict || !strings.Contains(body, "already exists") || !strings.Contains(body, "Ada owns storage.") {
		t.Fatalf("new entry on a taken slug: %d %s", code, errorText(body))
	}
	if n := u.versions(t, "people/ada"); n != 1 {
		t.Fatalf("the conflict wrote: %d versions", n)
	}
	expected, expectedSlug := formField(t, body, expectedRe), formField(t, body, expectedSlugRe)
	if expected != "1" || expectedSlug != "people/ada" {
		t.Fatalf("the form expects %s of %q, want 1 of people/ada", expected, expectedSlug)
	}
	// Another slug: a new entry, not a conflict with the one it left.
	if code, body := create("people/ada-search", "Ada owns search.", expected, expectedSlug); code != http.StatusSeeOther {
		t.Fatalf("new entry under another slug: %d %s", code, errorText(body))
	}
	if n := u.versions(t, "people/ada-search"); n != 1 {
		t.Fatalf("people/ada-search has %d versions, want 1", n)
	}
	// The same slug: the merge becomes its next version.
	if code, body := create("people/ada", "Ada owns storage and search.", expected, expectedSlug); code != http.StatusSeeOther {
		t.Fatalf("merge into the taken slug: %d %s", code, errorText(body))
	}
	if got, err := u.get(u.writerKey, "people/ada"); err != nil || got.Version != 2 || got.Content != "Ada owns storage and search." {
		t.Fatalf("people/ada after the merge: %+v %v", got, err)
	}
}

// TestForgottenPage: the forgotten view lists a forgotten entry with its
// title and tags from before, who forgot it and the tombstone, offers
// Restore of the version before the tombstone to a writer only, and is
// empty again after the restore.
func TestForgottenPage(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "notes/gone", "# Gone note\n\nfirst", "old")
	u.remember(t, u.writerKey, "notes/gone", "# Gone note\n\nsecond", "old", "x")
	u.remember(t, u.writerKey, "notes/kept", "stays")
	w := u.signIn(t, u.writer)
	code, body := w.get(projPath + "/forgotten")
	if code != http.StatusOK || !strings.Contains(body, `id="nothing-forgotten"`) {
		t.Fatalf("forgotten page before any forget: %d %s", code, errorText(body))
	}
	if code, _ := w.post(projPath+"/forget/notes/gone", url.Values{"expected_version": {"2"}}); code != http.StatusSeeOther {
		t.Fatalf("forget: %d", code)
	}
	_, body = w.get(projPath + "/forgotten")
	for _, want := range []string{`data-slug="notes/gone"`, ">Gone note</a>", `<span class="tag">x</span>`,
		`<td class="agent">alice</td>`, `?diff=2..3"`, `action="/w/ws/p/proj/restore/notes/gone"`, `name="version" value="2"`} {
		if !strings.Contains(body, want) {
			t.Errorf("forgotten page lacks %q", want)
		}
	}
	if strings.Contains(body, "notes/kept") {
		t.Error("the forgotten page lists a live entry")
	}
	r := u.signIn(t, u.reader)
	if _, body := r.get(projPath + "/forgotten"); !strings.Contains(body, `data-slug="notes/gone"`) || strings.Contains(body, "/restore/") {
		t.Error("a read key should see the forgotten entry without a Restore button")
	}
	if code, _ := w.post(projPath+"/restore/notes/gone", url.Values{"version": {"2"}}); code != http.StatusSeeOther {
		t.Fatalf("restore: %d", code)
	}
	if got, err := u.get(u.writerKey, "notes/gone"); err != nil || got.Version != 4 || !strings.Contains(got.Content, "second") {
		t.Fatalf("after restore: %+v %v", got, err)
	}
	if _, body := w.get(projPath + "/forgotten"); !strings.Contains(body, `id="nothing-forgotten"`) {
		t.Error("the forgotten page still lists the restored entry")
	}
}

// TestEditConflictWithForget: an entry forgotten while the form was open
// is a conflict whose theirs is the tombstone; saving then writes the text
// over it and brings the entry back.
func TestEditConflictWithForget(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "notes/a", "first")
	b := u.signIn(t, u.writer)
	if code, _ := b.post(projPath+"/forget/notes/a", url.Values{"expected_version": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("forget: %d", code)
	}
	form := url.Values{"slug": {"notes/a"}, "is_new": {"0"}, "content": {"mine"}, "expected_version": {"1"}, "expected_slug": {"notes/a"}}
	code, body := b.post(projPath+"/save", form)
	if code != http.StatusConflict || elementText(body, "text-theirs") != "(forgotten)" || elementText(body, "text-base") != "first" {
		t.Fatalf("save over a forget: %d %s", code, errorText(body))
	}
	form.Set("expected_version", formField(t, body, expectedRe))
	if code, body := b.post(projPath+"/save", form); code != http.StatusSeeOther {
		t.Fatalf("saving after the conflict: %d %s", code, errorText(body))
	}
	if got, err := u.get(u.writerKey, "notes/a"); err != nil || got.Version != 3 || got.Content != "mine" {
		t.Fatalf("after saving over the tombstone: %+v %v", got, err)
	}
}
