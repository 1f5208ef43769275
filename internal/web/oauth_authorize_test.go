package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
)

// TestOAuthAuthorizeOffIsUnknown: without OAuth the path is an unknown
// page, as before.
func TestOAuthAuthorizeOffIsUnknown(t *testing.T) {
	u := newUI(t)
	b := u.browser(t)
	for _, m := range []string{"GET", "POST"} {
		if resp, _ := b.do(m, oauth.AuthorizePath, url.Values{}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s without OAuth: %d, want 404", m, oauth.AuthorizePath, resp.StatusCode)
		}
	}
}

// TestOAuthAuthorizeShownErrors: while the client or its redirect URI is
// not known to be genuine, the error is shown to the person and nothing
// goes to any redirect URI (RFC 6749 §4.1.2.1) — on the GET and on a POST
// whose hidden fields were changed.
func TestOAuthAuthorizeShownErrors(t *testing.T) {
	o := newOAuthUI(t)
	b := o.browser(t)
	good := o.request()
	cases := map[string]url.Values{
		"unknown client":            with(good, "client_id", "no-such-client"),
		"no client":                 with(good, "client_id", ""),
		"unregistered redirect":     with(good, "redirect_uri", "https://evil.example/cb"),
		"redirect of another path":  with(good, "redirect_uri", claudeRedir+"/x"),
		"no redirect":               with(good, "redirect_uri", ""),
		"redirect sent twice":       {"redirect_uri": {claudeRedir, "https://evil.example/cb"}, "client_id": {o.client.ID}},
		"redirect twice, same also": with(good, "redirect_uri", ""),
	}
	cases["redirect twice, same also"]["redirect_uri"] = []string{claudeRedir, claudeRedir}
	for name, q := range cases {
		t.Run(name, func(t *testing.T) {
			for _, try := range []func() (*http.Response, string){
				func() (*http.Response, string) { return b.authorize(q) },
				func() (*http.Response, string) { return b.step(q, "deny") },
				func() (*http.Response, string) { return b.step(q, "signin", "key", o.writer) },
			} {
				resp, body := try()
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
					t.Fatalf("%s: %d, Location %q; want 400 and no redirect", resp.Request.Method, resp.StatusCode, resp.Header.Get("Location"))
				}
				if !strings.Contains(body, "Munin cannot sign this app in") {
					t.Errorf("%s: the page does not say why:\n%s", resp.Request.Method, errorText(body))
				}
				if csp := resp.Header.Get("Content-Security-Policy"); csp != contentSecurityPolicy("") {
					t.Errorf("%s: CSP %q, want the web UI's own", resp.Request.Method, csp)
				}
			}
		})
	}
}

// TestOAuthAuthorizeRedirectedErrors: once client and redirect URI are
// known, errors go back to the client with error, error_description,
// state and iss — on the GET, and on every POST step, whose hidden fields
// are checked again.
func TestOAuthAuthorizeRedirectedErrors(t *testing.T) {
	o := newOAuthUI(t)
	b := o.browser(t)
	good := o.request()
	cases := []struct {
		name  string
		q     url.Values
		error string
	}{
		{"plain PKCE", with(good, "code_challenge_method", "plain"), "invalid_request"},
		{"no PKCE", with(good, "code_challenge_method", "", "code_challenge", ""), "invalid_request"},
		{"short challenge", with(good, "code_challenge", "abc"), "invalid_request"},
		{"implicit flow", with(good, "response_type", "token"), "unsupported_response_type"},
		{"unknown scope", with(good, "scope", "memory admin"), "invalid_scope"},
		{"other resource", with(good, "resource", "https://other.example.com/mcp"), "invalid_target"},
		{"state twice", with(good, "state", ""), "invalid_request"},
	}
	cases[len(cases)-1].q["state"] = []string{"a", "b"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, try := range []struct {
				method string
				call   func() (*http.Response, string)
				status int
			}{
				{"GET", func() (*http.Response, string) { return b.authorize(c.q) }, http.StatusFound},
				{"POST signin", func() (*http.Response, string) { return b.step(c.q, "signin", "key", o.writer) }, http.StatusSeeOther},
				{"POST allow", func() (*http.Response, string) { return b.step(c.q, "allow") }, http.StatusSeeOther},
			} {
				resp, _ := try.call()
				if resp.StatusCode != try.status {
					t.Errorf("%s: status %d, want %d", try.method, resp.StatusCode, try.status)
				}
				a := answer(t, resp, claudeRedir)
				if a.Get("error") != c.error || a.Get("error_description") == "" || a.Get("iss") != oauthIssuer || a.Has("code") {
					t.Errorf("%s: answer %v, want error=%s with a description, iss and no code", try.method, a, c.error)
				}
				if want := c.q.Get("state"); a.Get("state") != want {
					t.Errorf("%s: state %q, want %q", try.method, a.Get("state"), want)
				}
			}
		})
	}
	if cookies := b.c.Jar.Cookies(mustURL(t, o.srv.URL)); len(cookies) != 0 {
		t.Errorf("a refused request signed in anyway: %v", cookies)
	}
}

// TestOAuthSignInAllow: the person pastes three keys (one per line), sees
// each project with the verb of its key's role and the client's name and
// host, allows, and the client gets a code, its state and the issuer; the
// code redeems with the request's verifier for tokens that act as exactly
// those keys. The person stays signed in to the web UI.
func TestOAuthSignInAllow(t *testing.T) {
	o := newOAuthUI(t)
	beta, _ := o.newKey(t, ws, "beta", "beta-reader", memory.RoleRead)
	gamma, _ := o.newKey(t, ws, "gamma", "gamma-proposer", memory.RolePropose)
	b := o.browser(t)
	q := o.request()

	resp, body := b.authorize(q)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, errorText(body))
	}
	for _, want := range []string{`<strong class="client">Claude</strong> (<span class="client-host">claude.ai</span>)`, `id="continue"`, `<textarea id="key" name="key"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the sign-in page lacks %s", want)
		}
	}
	for k := range q {
		if !strings.Contains(body, `name="`+k+`" value="`+q.Get(k)+`"`) {
			t.Errorf("the sign-in form does not carry %s", k)
		}
	}
	wantCSP := "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self' https://claude.ai; base-uri 'none'; frame-ancestors 'none'"
	if csp := resp.Header.Get("Content-Security-Policy"); csp != wantCSP {
		t.Errorf("CSP of the sign-in page:\n%s\nwant\n%s", csp, wantCSP)
	}

	resp, body = b.step(q, "signin", "key", o.writer+"\n"+beta+"\r\n"+gamma+"\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %d %s", resp.StatusCode, errorText(body))
	}
	want := []string{"read and write ws/proj", "read ws/beta", "read and propose changes to ws/gamma"}
	if got := consentRows(body); !slices.Equal(got, want) {
		t.Errorf("consent rows %q, want %q", got, want)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != wantCSP {
		t.Errorf("CSP of the consent page: %s", csp)
	}
	if !strings.Contains(body, "claude.ai") || !strings.Contains(body, `id="allow"`) || !strings.Contains(body, `id="oauth-add-key-form"`) {
		t.Error("the consent page lacks the host, Allow, or Add a key")
	}
	if code, page := b.get("/"); code != http.StatusOK || !strings.Contains(page, `id="my-keys"`) {
		t.Errorf("after signing in on the authorize page the web UI answers %d, not the signed-in overview", code)
	}

	resp, _ = b.step(q, "allow", "csrf", consentCSRF(t, body))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("allow: %d", resp.StatusCode)
	}
	a := answer(t, resp, claudeRedir)
	if a.Get("state") != "st-1" || a.Get("iss") != oauthIssuer || !strings.HasPrefix(a.Get("code"), memory.OAuthCodePrefix) || a.Has("error") {
		t.Fatalf("answer %v, want code, state st-1 and iss", a)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control of the answer with the code: %q", cc)
	}
	tok, err := o.env.Svc.ExchangeOAuthCode(context.Background(), service.OAuthCodeExchange{ClientID: o.client.ID, Code: a.Get("code"),
		Verifier: o.verifier, RedirectURI: claudeRedir, Resource: oauthResource})
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	c, err := o.env.Svc.AuthenticateOAuth(context.Background(), tok.Access, oauthResource)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range c.Keys() {
		got = append(got, verbOf(k.Role)+" "+k.ProjectLabel())
	}
	if !slices.Equal(got, want) {
		t.Errorf("the token acts as %q, want %q", got, want)
	}
}

// TestOAuthDeny: Deny, on the consent page or as Cancel before signing in,
// sends access_denied with state and iss, and no code.
func TestOAuthDeny(t *testing.T) {
	o := newOAuthUI(t)
	b := o.browser(t)
	q := o.request()
	_, body := b.step(q, "signin", "key", o.writer)
	for name, csrf := range map[string]string{"consent": consentCSRF(t, body), "cancel": ""} {
		resp, _ := b.step(q, "deny", "csrf", csrf)
		a := answer(t, resp, claudeRedir)
		if resp.StatusCode != http.StatusSeeOther || a.Get("error") != "access_denied" || a.Get("state") != "st-1" || a.Get("iss") != oauthIssuer || a.Has("code") {
			t.Errorf("%s: %d %v, want 303 with error=access_denied, state, iss and no code", name, resp.StatusCode, a)
		}
	}
}

// TestOAuthTamperedAllow: Allow re-checks the request the form carries: a
// changed PKCE method goes back as an error, a changed redirect URI is
// shown; neither issues a code.
func TestOAuthTamperedAllow(t *testing.T) {
	o := newOAuthUI(t)
	b := o.browser(t)
	q := o.request()
	_, body := b.step(q, "signin", "key", o.writer)
	csrf := consentCSRF(t, body)
	resp, _ := b.step(with(q, "code_challenge_method", "plain"), "allow", "csrf", csrf)
	if a := answer(t, resp, claudeRedir); a.Get("error") != "invalid_request" || a.Has("code") {
		t.Errorf("plain PKCE on allow: %v", a)
	}
	resp, _ = b.step(with(q, "redirect_uri", "https://evil.example/cb"), "allow", "csrf", csrf)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("changed redirect URI on allow: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The untampered form still works: the refusals above were the fields'.
	resp, _ = b.step(q, "allow", "csrf", csrf)
	if a := answer(t, resp, claudeRedir); !a.Has("code") {
		t.Errorf("the untampered allow: %v", a)
	}
}

// TestOAuthServerAdminRefused: a server-admin key signs in but cannot be
// given to an app: the page says why and offers no Allow, and a posted
// Allow issues nothing.
func TestOAuthServerAdminRefused(t *testing.T) {
	o := newOAuthUI(t)
	admin, _, err := o.env.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	b := o.browser(t)
	q := o.request()
	resp, body := b.step(q, "signin", "key", admin)
	if resp.StatusCode != http.StatusOK || !strings.Contains(errorText(body), "server-admin key") || strings.Contains(body, `id="allow"`) {
		t.Fatalf("server-admin consent: %d, error %q, Allow shown: %v", resp.StatusCode, errorText(body), strings.Contains(body, `id="allow"`))
	}
	b.csrf = csrfRe.FindStringSubmatch(body)[1]
	resp, body = b.step(q, "allow", "csrf", b.csrf)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" || !strings.Contains(errorText(body), "server-admin key") {
		t.Errorf("server-admin allow: %d, Location %q, error %q", resp.StatusCode, resp.Header.Get("Location"), errorText(body))
	}
}

// TestOAuthWrongKey: a wrong key gets the web sign-in's message on the
// authorize page; nothing is issued and no session starts. Of several
// keys, the refused one is named by position.
func TestOAuthWrongKey(t *testing.T) {
	o := newOAuthUI(t)
	b := o.browser(t)
	q := o.request()
	for pasted, want := range map[string]string{
		"munin_wrong":              "that key is unknown or revoked",
		o.writer + "\nmunin_wrong": "key 2",
		"":                         "that key is unknown or revoked",
	} {
		resp, body := b.step(q, "signin", "key", pasted)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Location") != "" || !strings.Contains(errorText(body), want) {
			t.Errorf("%q: %d, Location %q, error %q; want 401 naming %q", strings.ReplaceAll(pasted, o.writer, "<writer>"), resp.StatusCode, resp.Header.Get("Location"), errorText(body), want)
		}
		if !strings.Contains(body, `id="oauth-signin-form"`) {
			t.Error("the sign-in form is not shown again")
		}
	}
	if cookies := b.c.Jar.Cookies(mustURL(t, o.srv.URL)); len(cookies) != 0 {
		t.Errorf("a wrong key started a session: %v", cookies)
	}
}

// TestOAuthContinueAndAddKey: a browser signed in to the web UI continues
// with its session (the GET page cannot know it), adds a key of another
// project on the consent page — which joins the web session too — and
// allows both; signing in with other keys then replaces the session.
// Without a session, Continue asks to sign in.
func TestOAuthContinueAndAddKey(t *testing.T) {
	o := newOAuthUI(t)
	beta, _ := o.newKey(t, ws, "beta", "beta-writer", memory.RoleWrite)
	q := o.request()
	if resp, body := o.browser(t).step(q, "continue"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(errorText(body), "not signed in") {
		t.Errorf("continue without a session: %d %q", resp.StatusCode, errorText(body))
	}
	b := o.signIn(t, o.reader)
	resp, body := b.step(q, "continue")
	if got := consentRows(body); resp.StatusCode != http.StatusOK || !slices.Equal(got, []string{"read ws/proj"}) {
		t.Fatalf("continue: %d, rows %q", resp.StatusCode, got)
	}
	csrf := consentCSRF(t, body)
	resp, body = b.step(q, "addkey", "csrf", csrf, "key", beta)
	if got := consentRows(body); resp.StatusCode != http.StatusOK || !slices.Equal(got, []string{"read ws/proj", "read and write ws/beta"}) {
		t.Fatalf("add key: %d %q, rows %q", resp.StatusCode, errorText(body), got)
	}
	if len(o.sessionKeys(t, b)) != 2 {
		t.Errorf("the web session holds %v after adding a key on the consent page, want 2 keys", o.sessionKeys(t, b))
	}
	if resp, _ := b.step(q, "allow", "csrf", csrf); resp.StatusCode != http.StatusForbidden {
		t.Errorf("allow with the token from before the key was added: %d, want 403 (the session moved to a new token)", resp.StatusCode)
	}
	resp, _ = b.step(q, "allow", "csrf", consentCSRF(t, body))
	a := answer(t, resp, claudeRedir)
	tok, err := o.env.Svc.ExchangeOAuthCode(context.Background(), service.OAuthCodeExchange{ClientID: o.client.ID, Code: a.Get("code"),
		Verifier: o.verifier, RedirectURI: claudeRedir})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := o.env.Svc.AuthenticateOAuth(context.Background(), tok.Access, oauthResource); err != nil || len(c.Keys()) != 2 {
		t.Errorf("the token acts as %d keys (%v), want 2", len(c.Keys()), err)
	}
	// "Sign in with other keys instead": pasted keys start a new session
	// with just them, as the sign-in page does.
	resp, body = b.step(q, "signin", "key", o.writer)
	if got := consentRows(body); resp.StatusCode != http.StatusOK || !slices.Equal(got, []string{"read and write ws/proj"}) || len(o.sessionKeys(t, b)) != 1 {
		t.Errorf("signing in again on the consent page: %d, rows %q, session keys %v", resp.StatusCode, got, o.sessionKeys(t, b))
	}
	if !strings.Contains(body, `id="other-keys"`) {
		t.Error("the consent page offers no sign-in with other keys")
	}
}

// TestOAuthConsentCSRF: Allow and Add a key need the session's CSRF
// token; a cross-origin post is refused before any step, as every form of
// the web UI; none of them issues a code or changes the session.
func TestOAuthConsentCSRF(t *testing.T) {
	o := newOAuthUI(t)
	beta, _ := o.newKey(t, ws, "beta", "beta-writer", memory.RoleWrite)
	b := o.signIn(t, o.writer)
	q := o.request()
	other := o.signIn(t, o.reader)
	for name, csrf := range map[string]string{"missing": "", "wrong": "x" + b.csrf, "other session's": other.csrf} {
		for _, step := range []string{"allow", "addkey"} {
			resp, body := b.step(q, step, "csrf", csrf, "key", beta)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") || resp.Header.Get("Location") != "" {
				t.Errorf("%s with %s token: %d, Location %q; want 403 naming CSRF", step, name, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}
	for _, step := range []string{"allow", "signin", "continue"} {
		resp, _ := b.do("POST", oauth.AuthorizePath, with(q, "step", step, "csrf", b.csrf, "key", o.writer),
			"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("cross-origin %s: %d, Location %q; want 403", step, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if keys := o.sessionKeys(t, b); len(keys) != 1 {
		t.Errorf("the session holds %v, want its one key", keys)
	}
	// The same allow with the right token, same-origin, works.
	resp, _ := b.step(q, "allow", "csrf", b.csrf)
	if a := answer(t, resp, claudeRedir); !a.Has("code") {
		t.Errorf("allow with the right token: %v", a)
	}
}

// TestOAuthUnknownStep: a step the page does not know is refused on the
// sign-in page, with nothing sent to the client.
func TestOAuthUnknownStep(t *testing.T) {
	o := newOAuthUI(t)
	resp, body := o.browser(t).step(o.request(), "grant")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(errorText(body), "step must be") {
		t.Errorf("unknown step: %d, Location %q, error %q", resp.StatusCode, resp.Header.Get("Location"), errorText(body))
	}
}

// TestOAuthRedirectTarget: what the page says of a redirect URI, and the
// CSP source that lets the browser follow the redirect to it.
func TestOAuthRedirectTarget(t *testing.T) {
	cases := []struct {
		uri, host, source string
		local             bool
	}{
		{"https://claude.ai/api/mcp/auth_callback", "claude.ai", "https://claude.ai", false},
		{"https://chatgpt.com:8443/cb?x=1", "chatgpt.com:8443", "https://chatgpt.com:8443", false},
		{"http://127.0.0.1:33418/callback", "an app on this computer", "http://127.0.0.1:33418", true},
		{"http://[::1]/cb", "an app on this computer", "http://[::1]", true},
		{"http://localhost:8080/cb", "an app on this computer", "http://localhost:8080", true},
		{"com.example.app:/oauth", "an app on this computer (com.example.app:)", "com.example.app:", true},
		{"cursor://anysphere.cursor-mcp/oauth/callback", "an app on this computer (cursor:)", "cursor:", true},
		{"https://a;b/cb", "an unknown address", "", true},
		{"no-scheme", "an unknown address", "", true},
		{"a b:x", "an unknown address", "", true},
	}
	for _, c := range cases {
		got := targetOf(c.uri)
		if got.Host != c.host || got.FormAction != c.source || got.Local != c.local {
			t.Errorf("targetOf(%q) = %+v, want host %q, source %q, local %v", c.uri, got, c.host, c.source, c.local)
		}
	}
}
