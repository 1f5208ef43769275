package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"munin/internal/oauth"
	"munin/internal/service"
)

// TestBrowserOAuthSignIn: in Chromium, the whole authorize page — open the
// URL an app sends the person to, paste a key, Allow — ends on the app's
// redirect URI with the code, its state and the issuer. The app is a
// server on 127.0.0.1 at another port than Munin's (registered without a
// port, as native apps do), so the browser follows the redirect after the
// consent form's POST only if the page's CSP form-action lets it: with
// form-action 'self' alone Chromium blocks it and the app never hears back.
func TestBrowserOAuthSignIn(t *testing.T) {
	ctx := newChrome(t)
	got := make(chan url.Values, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case got <- r.URL.Query():
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>app</title><p id="back">back in the app</p>`))
	}))
	t.Cleanup(app.Close)
	o := newOAuthUI(t, "http://127.0.0.1/callback")
	redirect := app.URL + "/callback"
	q := with(o.request(), "redirect_uri", redirect)

	run(t, ctx, "sign in on the authorize page",
		chromedp.Navigate(o.srv.URL+oauth.AuthorizePath+"?"+q.Encode()),
		chromedp.WaitVisible("#key"),
		chromedp.SetValue("#key", o.writer),
		chromedp.Click("#signin"),
		chromedp.WaitVisible("#allow"))
	consent := textOf(t, ctx, "#consent-projects")
	if !strings.Contains(consent, "Claude (an app on this computer) wants to read and write ws/proj") {
		t.Errorf("the consent reads %q", strings.Join(strings.Fields(consent), " "))
	}
	run(t, ctx, "allow", chromedp.Click("#allow"))
	var a url.Values
	select {
	case a = <-got:
	case <-time.After(30 * time.Second):
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("the app's redirect URI got no request within 30 s; the browser is at %s (a CSP form-action without the app's origin blocks the redirect)", loc)
	}
	if a.Get("state") != "st-1" || a.Get("iss") != oauthIssuer || a.Get("code") == "" || a.Has("error") {
		t.Fatalf("the app got %v, want code, state st-1 and iss", a)
	}
	run(t, ctx, "the app's page", chromedp.WaitVisible("#back"))
	if _, err := o.env.Svc.ExchangeOAuthCode(context.Background(), service.OAuthCodeExchange{ClientID: o.client.ID, Code: a.Get("code"),
		Verifier: o.verifier, RedirectURI: redirect, Resource: oauthResource}); err != nil {
		t.Errorf("the code the app got does not redeem: %v", err)
	}
}
