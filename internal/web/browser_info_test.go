package web

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestBrowserInfo: in Chromium, times read relative ("5 seconds ago") with
// the exact time as their title, and the logs keep the exact second
// visible; the stale checkbox sits beside its label at 390 and 1280 px; the
// keys page's copy button puts the new key on the clipboard, and with the
// clipboard refused selects it instead.
func TestBrowserInfo(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.", "db")
	base := u.srv.URL
	signInBrowser(t, ctx, base, u.admin)

	run(t, ctx, "project page", chromedp.Navigate(base+projPath), chromedp.WaitVisible("#entries"))
	cell := `#entries td.when time.ago`
	if got := textOf(t, ctx, cell); !agoRe.MatchString(got) {
		t.Errorf("the entry's time reads %q, want a relative time", got)
	}
	title := value(t, ctx, "time title", chromedp.Evaluate[string](`document.querySelector('`+cell+`').title`))
	if !timeRe.MatchString(`<time class="ago" datetime="` + value(t, ctx, "datetime", chromedp.Evaluate[string](`document.querySelector('`+cell+`').getAttribute('datetime')`)) + `" title="` + title + `">`) {
		t.Errorf("the relative time's title %q is not the exact time to the second", title)
	}

	// Checkboxes beside their text, on a phone and a desktop: the search
	// bar's, and the search log filter's.
	for _, page := range []struct{ path, box string }{{projPath, "#stale"}, {projPath + "/searches", "#misses"}} {
		run(t, ctx, "open "+page.path, chromedp.Navigate(base+page.path), chromedp.WaitVisible(page.box))
		for _, width := range []int64{390, 1280} {
			run(t, ctx, fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(width, 900))
			beside := `(() => {
				const box = document.querySelector('` + page.box + `').getBoundingClientRect();
				const text = document.querySelector('` + page.box + ` + span').getBoundingClientRect();
				const mid = box.top + box.height / 2;
				return box.right <= text.left && mid > text.top && mid < text.bottom;
			})()`
			if !value(t, ctx, "checkbox beside label", chromedp.Evaluate[bool](beside)) {
				t.Errorf("%s at %d px: the checkbox %s is not beside its label", page.path, width, page.box)
			}
		}
		run(t, ctx, "desktop", chromedp.EmulateViewport(1280, 900))
	}

	// The audit log: relative, and the exact second visible beside it.
	run(t, ctx, "audit log", chromedp.Navigate(base+projPath+"/audit"), chromedp.WaitVisible("#audit"))
	at := `#audit td.when`
	if got := textOf(t, ctx, at+" time.ago"); !agoRe.MatchString(got) {
		t.Errorf("the audit row's time reads %q, want a relative time", got)
	}
	exact := textOf(t, ctx, at+" .exact")
	if want := value(t, ctx, "audit title", chromedp.Evaluate[string](`document.querySelector('`+at+` time.ago').title`)); exact != want || !strings.HasSuffix(exact, " UTC") {
		t.Errorf("the audit row shows %q beside its relative time, want the exact %q", exact, want)
	}

	// Keys: create one, copy it.
	run(t, ctx, "create key",
		chromedp.Navigate(base+"/keys"),
		chromedp.WaitVisible("#create-key"),
		chromedp.SetValue("#key-agent", "ci-bot"),
		chromedp.SetValue("#key-role", "read"),
		chromedp.Click("#create-key-btn"),
		chromedp.WaitVisible("#copy-token"))
	token := textOf(t, ctx, "#token")
	if !strings.HasPrefix(token, "munin_") {
		t.Fatalf("new key %q", token)
	}
	if got := textOf(t, ctx, "#setup-command"); !strings.Contains(got, "Bearer "+token) {
		t.Errorf("the client configuration %q lacks the new key", got)
	}
	grantClipboard(t, ctx, base)
	run(t, ctx, "copy key", chromedp.Click("#copy-token"))
	waitText(t, ctx, "#copy-status", "Copied the key to the clipboard.")
	clip := value(t, ctx, "read clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if clip != token {
		t.Errorf("the clipboard holds %q, want the new key", clip)
	}

	// Refused (as a browser may refuse a page the clipboard): the text is
	// selected for Ctrl+C instead.
	run(t, ctx, "refuse the clipboard", chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText = () => Promise.reject(new Error("refused"))`))
	run(t, ctx, "copy command", chromedp.Click("#copy-command"))
	waitText(t, ctx, "#copy-status", "Selected the command: press Ctrl+C (⌘C) to copy it.")
	if sel := value(t, ctx, "selection", chromedp.Evaluate[string](`window.getSelection().toString()`)); sel != textOf(t, ctx, "#setup-command") {
		t.Errorf("selected %q, want the command", sel)
	}
}

// agoRe matches a time just past as app.js words it (Intl.RelativeTimeFormat,
// numeric "auto"): the entry was written moments before the page loaded.
var agoRe = regexp.MustCompile(`^(now|\d+ (second|minute)s? ago)$`)

// grantClipboard lets origin's pages write and read the clipboard, as a
// person allowing it would.
func grantClipboard(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	for _, name := range []string{"clipboard-write", "clipboard-read"} {
		if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin,
			BrowserContextID: chromedp.FromContext(ctx).BrowserContextID}); err != nil { // the test's own context (startChrome)
			t.Fatalf("grant %s: %v", name, err)
		}
	}
}

// waitText waits (bounded) until sel's text is want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = textOf(t, ctx, sel); got == want {
			return
		}
	}
	t.Errorf("%s reads %q, want %q", sel, got, want)
}
