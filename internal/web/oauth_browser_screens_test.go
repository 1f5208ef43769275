package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"munin/internal/oauth"
)

// TestBrowserOAuthPagesFitThePhone gives the OAuth pages — sign in with a
// key, consent, and an error shown instead of redirected (an unknown
// client) — the checks TestBrowserEveryPageFitsTheScreen and
// TestBrowserAxeEveryPage give every other page, at 1280, 390 and 360 px:
// no sideways scrolling, touch targets of 44 px on a phone, and no serious
// or critical axe-core violation. They need a server with OAuth on, which
// the other sweeps' world does not have.
func TestBrowserOAuthPagesFitThePhone(t *testing.T) {
	sweepsOff(t)
	src := axeSource(t)
	ctx := newChrome(t)
	o := newOAuthUI(t)
	authorize := o.srv.URL + oauth.AuthorizePath + "?" + o.request().Encode()
	unknown := o.srv.URL + oauth.AuthorizePath + "?" + with(o.request(), "client_id", "no-such-client").Encode()
	for _, width := range screenWidths {
		check := func(page string) {
			t.Helper()
			r := value(t, ctx, "measure "+page, chromedp.Evaluate[layoutReport](layoutProblems))
			for _, problem := range r.Problems {
				t.Errorf("page %s at %d px: %s", page, width, problem)
			}
			run(t, ctx, "inject axe-core into "+page, chromedp.Evaluate[chromedp.Void](src))
			found := value(t, ctx, "axe on "+page, chromedp.Evaluate[[]axeViolation](axeRun, chromedp.EvalAwaitPromise))
			for _, v := range found {
				t.Errorf("page %s at %d px: %s (%s, %s) on %s", page, width, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, " | "))
			}
		}
		if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatalf("clear cookies: %v", err)
		}
		run(t, ctx, fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(width, screenHeight))
		run(t, ctx, fmt.Sprintf("authorize at %d px", width), chromedp.Navigate(authorize), chromedp.WaitVisible("#key"))
		check("authorize-sign-in")
		run(t, ctx, "sign in", chromedp.SetValue("#key", o.writer), chromedp.Click("#signin"), chromedp.WaitVisible("#allow"))
		check("authorize-consent")
		run(t, ctx, "unknown client", chromedp.Navigate(unknown), chromedp.WaitVisible("main"))
		if body := textOf(t, ctx, "main"); !strings.Contains(strings.ToLower(body), "client") {
			t.Errorf("the unknown client's page does not name the problem: %q", body)
		}
		check("authorize-error")
	}
}
