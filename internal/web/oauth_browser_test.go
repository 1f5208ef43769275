package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"munin/internal/oauth"
	"munin/internal/service"
)

// TestBrowserOAuthSignIn: in Chromium, the whole authorize page, twice.
// First: open the URL an app sends the person to, paste a key, Allow; the
// browser ends on the app's redirect URI with the code, its state and the
// issuer. The app is a server on 127.0.0.1 at another port than Munin's
// (registered without a port, as native apps do), so the browser follows
// the redirect after the consent form's POST only if the page's CSP
// form-action lets it: with form-action 'self' alone Chromium blocks it and
// the app never hears back. Second: from the app's page, opened as
// localhost (another site than 127.0.0.1), the person follows a link to the
// authorize page — a cross-site navigation, so the SameSite=Strict session
// cookie of the first round stays behind — and continues with the
// signed-in session, whose cookie the page's own POST carries.
func TestBrowserOAuthSignIn(t *testing.T) {
	ctx := newChrome(t)
	o := newOAuthUI(t, "http://127.0.0.1/callback")
	got := make(chan url.Values, 1)
	var connect string // the authorize URL the app's page links to
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/callback":
			select {
			case got <- r.URL.Query():
			default:
			}
			_, _ = w.Write([]byte(`<!doctype html><title>app</title><p id="back">back in the app</p>`))
		case "/":
			_, _ = w.Write([]byte(`<!doctype html><title>app</title><a id="connect" href="` + connect + `">Connect Munin</a>`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(app.Close)
	redirect := app.URL + "/callback"
	q := with(o.request(), "redirect_uri", redirect)
	authorizeURL := o.srv.URL + oauth.AuthorizePath + "?" + q.Encode()
	connect = strings.ReplaceAll(authorizeURL, "&", "&amp;")

	// allow clicks Allow and returns what the app's redirect URI got.
	allow := func(round string) url.Values {
		t.Helper()
		run(t, ctx, round+": allow", chromedp.Click("#allow"))
		select {
		case a := <-got:
			run(t, ctx, round+": the app's page", chromedp.WaitVisible("#back"))
			return a
		case <-time.After(30 * time.Second):
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s: the app's redirect URI got no request within 30 s; the browser is at %s (a CSP form-action without the app's origin blocks the redirect)", round, loc)
			return nil
		}
	}
	redeem := func(round string, a url.Values) {
		t.Helper()
		if a.Get("state") != "st-1" || a.Get("iss") != oauthIssuer || a.Get("code") == "" || a.Has("error") {
			t.Fatalf("%s: the app got %v, want code, state st-1 and iss", round, a)
		}
		if _, err := o.env.Svc.ExchangeOAuthCode(context.Background(), service.OAuthCodeExchange{ClientID: o.client.ID, Code: a.Get("code"),
			Verifier: o.verifier, RedirectURI: redirect, Resource: oauthResource}); err != nil {
			t.Errorf("%s: the code the app got does not redeem: %v", round, err)
		}
	}

	run(t, ctx, "paste a key on the authorize page",
		chromedp.Navigate(authorizeURL),
		chromedp.WaitVisible("#key"),
		chromedp.SetValue("#key", o.writer),
		chromedp.Click("#signin"),
		chromedp.WaitVisible("#allow"))
	consent := strings.Join(strings.Fields(textOf(t, ctx, "#consent-projects")), " ")
	if !strings.Contains(consent, "Claude (an app on this computer) wants to read and write ws/proj") {
		t.Errorf("the consent reads %q", consent)
	}
	redeem("pasted key", allow("pasted key"))

	run(t, ctx, "follow the app's link from another site",
		chromedp.Navigate(strings.Replace(app.URL, "127.0.0.1", "localhost", 1)+"/"),
		chromedp.WaitVisible("#connect"),
		chromedp.Click("#connect"),
		chromedp.WaitVisible("#continue"),
		chromedp.Click("#continue"),
		chromedp.WaitVisible("#allow"))
	if gets := o.gets.take(); !slices.Equal(gets, []string{"no cookie", "no cookie"}) {
		t.Errorf("the GETs of the authorize page came with %q; want no session cookie on either (the first has none yet, the second is cross-site)", gets)
	}
	redeem("signed-in session", allow("signed-in session"))
}
