package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// maxTabs bounds how often tabTo presses Tab: more than any page of the UI
// has stops before its main content, so a target never reached fails
// instead of looping.
const maxTabs = 80

// focusShown reports whether the focused element draws a focus ring: a
// person on the keyboard must see where they are.
const focusShown = `(() => { const e = document.activeElement; if (!e || e === document.body) return false;
  const s = getComputedStyle(e); return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0; })()`

// tabTo presses Tab until the focused element matches sel, as a person
// moving through the page would, and checks that the focus is visible
// there. It fails after maxTabs presses.
func tabTo(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	match := `(document.activeElement && document.activeElement.matches(` + jsString(sel) + `))`
	for i := 0; i < maxTabs; i++ {
		if value(t, ctx, "focus on "+sel+"?", chromedp.Evaluate[bool](match)) {
			if !value(t, ctx, "focus ring on "+sel, chromedp.Evaluate[bool](focusShown)) {
				t.Errorf("%s has the focus but shows no focus ring", sel)
			}
			return
		}
		run(t, ctx, "Tab towards "+sel, chromedp.KeyEvent(kb.Tab))
	}
	t.Fatalf("%d Tabs did not reach %s (focus is on %q)", maxTabs, sel,
		value(t, ctx, "focused element", chromedp.Evaluate[string](`document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : ''`)))
}

// TestBrowserMainFlowByKeyboard: a person signs in, opens a project and an
// entry, edits it and saves, with the keyboard alone — typing, Tab and
// Enter, no click and no focus set by the test (issue 26, point 5).
func TestBrowserMainFlowByKeyboard(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite.\n", "db")
	u.remember(t, u.writerKey, "notes/other", "Something else entirely.")
	base := u.srv.URL
	// A headless window never has the system's focus, and a page without it
	// matches no :focus rule; emulate a window in front, as a person has it.
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "open the sign-in page", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#key"))
	tabTo(t, ctx, "#key")
	run(t, ctx, "type the key", chromedp.KeyEvent(u.writer))
	if got := flashAfter(t, ctx, "sign in with Enter", chromedp.KeyEvent(kb.Enter)); !strings.Contains(got, "Signed in as alice") {
		t.Fatalf("after signing in: %q", got)
	}

	tabTo(t, ctx, `a.project-link[href="`+projPath+`"]`)
	run(t, ctx, "open the project with Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#entries"))
	tabTo(t, ctx, `a.entry-link[href="`+projPath+`/e/decisions/db"]`)
	run(t, ctx, "open the entry with Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#content"))
	tabTo(t, ctx, "#edit")
	run(t, ctx, "open the editor with Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#edit-form"))
	tabTo(t, ctx, "textarea#content")
	run(t, ctx, "type at the end of the text",
		chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent("Writes go through one connection."))
	tabTo(t, ctx, "#save")
	if got := flashAfter(t, ctx, "save with Enter", chromedp.KeyEvent(kb.Enter)); got != "Saved decisions/db as version 2." {
		t.Errorf("after saving: %q", got)
	}
	e, err := u.get(u.writerKey, "decisions/db")
	if err != nil || !strings.Contains(e.Content, "We use SQLite.") || !strings.HasSuffix(strings.TrimSpace(e.Content), "Writes go through one connection.") {
		t.Errorf("decisions/db after the keyboard edit: %q, %v", e.Content, err)
	}
}
