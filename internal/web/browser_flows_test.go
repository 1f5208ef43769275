package web

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"munin/internal/memory"
)

// TestBrowserEditConflict: a person opens the edit form, an agent writes
// meanwhile, and the save shows base, theirs and yours with the diff of
// base to theirs — stacked on a phone; the merged text then saves as the
// next version.
func TestBrowserEditConflict(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.\nOne writer.\n", "db")
	signInBrowser(t, ctx, u.srv.URL, u.writer)
	run(t, ctx, "open the edit form",
		chromedp.Navigate(u.srv.URL+projPath+"/e/decisions/db"),
		chromedp.Click("#edit"),
		chromedp.WaitVisible("#edit-form"),
		chromedp.SetValue("#content", "We use SQLite.\nOne writer, group commit.\n"))
	// Theirs adds a long unbroken line, which must not widen the page on a phone.
	u.remember(t, u.adminKey, "decisions/db", "We use SQLite in WAL mode.\nOne writer.\nSee https://sqlite.org/"+strings.Repeat("wal", 60)+"\n", "db")
	run(t, ctx, "save the stale form", chromedp.Click("#save"), chromedp.WaitVisible("#conflict"))
	if n := u.versions(t, "decisions/db"); n != 2 {
		t.Fatalf("the conflict wrote: %d versions, want 2", n)
	}
	for sel, want := range map[string]string{
		"#text-base":    "We use SQLite.\nOne writer.",
		"#text-theirs":  "We use SQLite in WAL mode.\nOne writer.\nSee https://sqlite.org/walwal",
		"#text-yours":   "We use SQLite.\nOne writer, group commit.",
		"#theirs-agent": "root",
		"#save-hint":    "version 3",
	} {
		if got := textOf(t, ctx, sel); !strings.Contains(got, want) {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	if got := textOf(t, ctx, "#conflict-diff tr.add"); !strings.Contains(got, "WAL mode") {
		t.Errorf("the diff base→theirs adds %q, want the WAL line", got)
	}
	if got := value(t, ctx, "form content", chromedp.Value("#content")); got != "We use SQLite.\nOne writer, group commit.\n" {
		t.Errorf("the form holds %q, want yours", got)
	}

	// On a phone the three texts stack and the page does not scroll sideways.
	run(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	stacked := value(t, ctx, "layout at 390 px", chromedp.Evaluate[bool](`(() => {
		const s = document.querySelectorAll('#conflict-texts > section');
		return s.length === 3 && s[1].getBoundingClientRect().top >= s[0].getBoundingClientRect().bottom &&
			s[2].getBoundingClientRect().top >= s[1].getBoundingClientRect().bottom; })()`))
	if !stacked {
		t.Error("at 390 px base, theirs and yours are not stacked")
	}
	// The page does not scroll sideways: a wide diff scrolls in its own box.
	if w := value(t, ctx, "page width at 390 px", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("at 390 px the conflict page is %d px wide", w)
	}
	run(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 900))

	merged := "We use SQLite in WAL mode.\nOne writer, group commit.\n"
	run(t, ctx, "merge", chromedp.SetValue("#content", merged))
	if got := flashAfter(t, ctx, "save the merge", chromedp.Click("#save")); got != "Saved decisions/db as version 3." {
		t.Errorf("after the merge: %q", got)
	}
	got, err := u.get(u.writerKey, "decisions/db")
	if err != nil || got.Version != 3 || got.Content != strings.TrimSuffix(merged, "\n")+"\n" || got.Agent != "alice" {
		t.Fatalf("after the merge: v%d by %s %q (%v)", got.Version, got.Agent, got.Content, err)
	}
}

// TestBrowserForgottenRestore: forget an entry in the UI, find it on the
// forgotten page, restore it; it is back in the entry list with its
// content, and nothing is forgotten any more.
func TestBrowserForgottenRestore(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "people/ada", "# Ada\n\nAda owns the storage layer.", "team")
	u.remember(t, u.writerKey, "notes/other", "Something else.")
	signInBrowser(t, ctx, u.srv.URL, u.writer)
	run(t, ctx, "open the entry", chromedp.Navigate(u.srv.URL+projPath+"/e/people/ada"), chromedp.WaitVisible("#content"))
	if got := flashAfter(t, ctx, "forget", chromedp.Click("#forget")); !strings.HasPrefix(got, "Forgot people/ada") {
		t.Fatalf("after forget: %q", got)
	}
	openForgotten(t, ctx, u)
	if got := textOf(t, ctx, `tr.forgotten-row[data-slug="people/ada"] .entry-link`); got != "Ada" {
		t.Errorf("the forgotten row shows %q, want the title Ada", got)
	}
	// On a phone the table scrolls in its own box, not the page.
	run(t, ctx, "phone width", chromedp.EmulateViewport(390, 844))
	if w := value(t, ctx, "page width at 390 px", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("at 390 px the forgotten page is %d px wide", w)
	}
	run(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 900))
	if got := flashAfter(t, ctx, "restore", chromedp.Click(`tr.forgotten-row[data-slug="people/ada"] button.restore`)); got != "Restored version 1 as version 3." {
		t.Errorf("after restore: %q", got)
	}
	if got := textOf(t, ctx, "#content"); !strings.Contains(got, "Ada owns the storage layer.") {
		t.Errorf("restored content %q", got)
	}
	run(t, ctx, "entry list", chromedp.Navigate(u.srv.URL+projPath), chromedp.WaitVisible("#entries"))
	if n := count(t, ctx, `#entries a.entry-link[href="/w/ws/p/proj/e/people/ada"]`); n != 1 {
		t.Errorf("the entry list shows people/ada %d times, want once", n)
	}
	openForgotten(t, ctx, u)
	if n := count(t, ctx, "#nothing-forgotten"); n != 1 {
		t.Errorf("the forgotten page is not empty after the restore")
	}
}

// openForgotten opens the project's forgotten page: by its tab where the
// layout has one, else by its URL.
func openForgotten(t *testing.T, ctx context.Context, u *ui) {
	t.Helper()
	if count(t, ctx, "#tab-forgotten") > 0 {
		run(t, ctx, "open the forgotten tab", chromedp.Click("#tab-forgotten"), chromedp.WaitVisible("#forgotten-entries, #nothing-forgotten"))
		return
	}
	run(t, ctx, "open the forgotten page", chromedp.Navigate(u.srv.URL+projPath+"/forgotten"), chromedp.WaitVisible("#forgotten-entries, #nothing-forgotten"))
}

// TestBrowserServerAdminLinks: every same-origin link on every page a
// server-admin key reaches from its overview opens without an error: the
// key administers projects but reads no memory, so no link may lead to an
// entry list, a log or a review queue.
func TestBrowserServerAdminLinks(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.")
	u.newKey(t, "team", "ops", "oncall", memory.RoleAdmin)
	server, _, err := u.env.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	signInBrowser(t, ctx, u.srv.URL, server)
	seen := crawl(t, ctx, u.srv.URL, 60)
	for _, want := range []string{"/", "/keys", projPath + "/settings", "/w/team/p/ops/settings"} {
		if !seen[want] {
			t.Errorf("the server-admin cannot reach %s by links (reached %v)", want, pathsOf(seen))
		}
	}
}

// crawl opens base's "/" and then every same-origin link on each page it
// reaches (breadth first, at most limit pages), failing on a page that
// answers 4xx/5xx or shows an error box. It returns the paths opened.
func crawl(t *testing.T, ctx context.Context, base string, limit int) map[string]bool {
	t.Helper()
	seen := map[string]bool{"/": true}
	queue := []string{"/"}
	for len(queue) > 0 && len(seen) <= limit {
		path := queue[0]
		queue = queue[1:]
		run(t, ctx, "open "+path, chromedp.Navigate(base+path), chromedp.WaitReady("body"))
		status := value(t, ctx, "status of "+path, chromedp.Evaluate[int](`performance.getEntriesByType('navigation')[0].responseStatus`))
		if status >= 400 || count(t, ctx, "#error") > 0 {
			errText := ""
			if count(t, ctx, "#error") > 0 {
				errText = textOf(t, ctx, "#error")
			}
			t.Errorf("GET %s: status %d %s", path, status, errText)
			continue
		}
		links := value(t, ctx, "links of "+path, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href]'))
			.filter(a => a.origin === location.origin).map(a => a.pathname + a.search)`))
		for _, l := range links {
			if p, err := url.PathUnescape(l); err == nil && !seen[p] {
				seen[p] = true
				queue = append(queue, l)
			}
		}
	}
	if len(queue) > 0 {
		t.Errorf("more than %d pages reachable; raise the limit", limit)
	}
	return seen
}

// pathsOf lists a set's members, for messages.
func pathsOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
