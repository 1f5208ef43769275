package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserProjectPageHearsAgentWrites: an open project page announces
// an agent's writes as they happen (EventSource through the page's CSP),
// in a polite live region, and its link reloads the page with the entry.
func TestBrowserProjectPageHearsAgentWrites(t *testing.T) {
	ctx := newLiveChrome(t)
	u := newUI(t)
	base := u.srv.URL
	signInBrowser(t, ctx, base, u.reader)
	run(t, ctx, "open project",
		chromedp.Navigate(base+projPath),
		chromedp.WaitVisible("#entries"))
	if got := value(t, ctx, "live region", chromedp.AttributeValue[string]("#live", "aria-live")); got.Value != "polite" {
		t.Errorf("aria-live %q, want polite", got.Value)
	}
	if n := count(t, ctx, "tr.entry-row"); n != 0 {
		t.Fatalf("%d entries before the write", n)
	}

	u.remember(t, u.writerKey, "decisions/live", "Written while the page is open.")
	run(t, ctx, "wait for the notice", chromedp.WaitVisible("#live-reload"))
	if got := textOf(t, ctx, "#live"); !strings.Contains(got, "1 new change") || !strings.Contains(got, "alice remember decisions/live v1") {
		t.Errorf("notice %q", got)
	}
	u.remember(t, u.writerKey, "decisions/live", "Written again.")
	run(t, ctx, "wait for the second change",
		chromedp.Poll[chromedp.Void](`document.querySelector('#live').textContent.includes('2 new changes')`))

	run(t, ctx, "reload", chromedp.Click("#live-reload"), chromedp.WaitVisible(`a.entry-link`))
	if got := textOf(t, ctx, "tr.entry-row td.num"); got != "2" {
		t.Errorf("after reload the entry is at version %q, want 2", got)
	}
}
