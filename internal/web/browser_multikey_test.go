package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"munin/internal/memory"
)

// TestBrowserAddKeyAndSearchAll: in Chromium, a person signed in with a read
// key of ws/proj adds a write key of ws/beta on the overview, sees both
// projects, searches both at once from a project page's scope select, and
// finds the edit buttons in ws/beta only.
func TestBrowserAddKeyAndSearchAll(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-writer", memory.RoleWrite)
	u.remember(t, u.writerKey, "notes/alpha", "the zeppelin hangar of alpha")
	u.remember(t, betaKey, "notes/beta", "zeppelin maintenance for beta")
	signInBrowser(t, ctx, u.srv.URL, u.reader)
	if n := count(t, ctx, "a.project-link"); n != 1 {
		t.Fatalf("the overview lists %d projects before adding a key, want 1", n)
	}
	run(t, ctx, "type key", chromedp.SetValue("#add-key-input", beta))
	if got := flashAfter(t, ctx, "add key", chromedp.Click("#add-key-btn")); !strings.Contains(got, "ws/beta") {
		t.Errorf("flash after adding a key: %q, want it to name ws/beta", got)
	}
	if n := count(t, ctx, "a.project-link"); n != 2 {
		t.Errorf("the overview lists %d projects after adding a key, want 2", n)
	}
	if v := value(t, ctx, "key field", chromedp.Evaluate[string](`document.querySelector('#add-key-input').value`)); v != "" {
		t.Error("the add-key field still holds the key after adding it")
	}
	run(t, ctx, "search all from a project page",
		chromedp.Navigate(u.srv.URL+projPath),
		chromedp.WaitVisible("#q"),
		chromedp.SetValue("#q", "zeppelin"),
		chromedp.SetValue("#scope", "all"),
		chromedp.Click("#search-btn"),
		chromedp.WaitVisible("#hits"))
	if n := count(t, ctx, "#hits li.hit"); n != 2 {
		t.Errorf("search all found %d hits, want 2", n)
	}
	if got := textOf(t, ctx, "#hits"); !strings.Contains(got, "ws/proj") || !strings.Contains(got, "ws/beta") {
		t.Errorf("the hits do not name their projects: %q", got)
	}
	run(t, ctx, "open ws/beta's hit",
		chromedp.Click(`a.hit-title[href="/w/ws/p/beta/e/notes/beta"]`),
		chromedp.WaitVisible("#content"))
	if n := count(t, ctx, "#edit"); n != 1 {
		t.Error("no edit button in ws/beta, where the session holds a write key")
	}
	run(t, ctx, "open ws/proj's entry", chromedp.Navigate(u.srv.URL+projPath+"/e/notes/alpha"), chromedp.WaitVisible("#content"))
	if n := count(t, ctx, "#edit, #forget, #new-entry"); n != 0 {
		t.Errorf("%d edit controls in ws/proj, where the session holds a read key", n)
	}
}
