package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
	"munin/internal/servicetest"
)

const (
	oauthIssuer   = "https://munin.example.com"
	oauthResource = oauthIssuer + "/mcp"
	claudeRedir   = "https://claude.ai/api/mcp/auth_callback"
)

// oauthUI is the web UI with OAuth on, one registered client ("Claude",
// redirecting to claudeRedir) and a PKCE verifier for its requests.
type oauthUI struct {
	*ui
	client   memory.OAuthClient
	verifier string
	// gets records, for each GET of the authorize page, whether the
	// browser sent the session cookie along.
	gets *requestLog
}

// newOAuthUI builds the web UI over a service with OAuth on and the issuer
// set, as the server runs it with --public-url. The client may register
// further redirect URIs.
func newOAuthUI(t *testing.T, redirects ...string) *oauthUI {
	t.Helper()
	env := servicetest.New(t, service.Options{OAuth: &service.OAuthOptions{Resources: []string{oauthResource}}})
	u := newUIOn(t, env)
	// newUIOn's handler has no issuer: serve one that has.
	h, err := New(env.Svc, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: u.clock.now, Issuer: oauthIssuer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.streams.Close)
	gets := &requestLog{}
	u.h, u.srv = h, httptest.NewServer(u.seen.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == oauth.AuthorizePath {
			_, err := r.Cookie(cookieName)
			gets.mu.Lock()
			gets.reqs = append(gets.reqs, map[bool]string{true: "cookie", false: "no cookie"}[err == nil])
			gets.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(u.srv.Close)
	client, err := env.Svc.RegisterOAuthClient(context.Background(), memory.ClientRegistration{Name: "Claude",
		RedirectURIs: append([]string{claudeRedir}, redirects...), GrantTypes: []string{"authorization_code", "refresh_token"}})
	if err != nil {
		t.Fatal(err)
	}
	return &oauthUI{ui: u, client: client, verifier: oauth2.GenerateVerifier(), gets: gets}
}

// request is a good authorization request of the client, as claude.ai
// sends it.
func (o *oauthUI) request() url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {o.client.ID}, "redirect_uri": {claudeRedir}, "state": {"st-1"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(o.verifier)}, "code_challenge_method": {"S256"},
		"resource": {oauthResource}, "scope": {"memory"},
	}
}

// with is the request with some parameters changed ("" removes one).
func with(q url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			out.Del(kv[i])
		} else {
			out.Set(kv[i], kv[i+1])
		}
	}
	return out
}

// authorize GETs the authorize page for q.
func (b *browser) authorize(q url.Values) (*http.Response, string) {
	b.t.Helper()
	return b.do("GET", oauth.AuthorizePath+"?"+q.Encode(), nil)
}

// step POSTs one step of the authorize page: q's parameters as the hidden
// fields, the step, and extra fields (kv pairs).
func (b *browser) step(q url.Values, step string, kv ...string) (*http.Response, string) {
	b.t.Helper()
	f := with(q, "step", step)
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return b.do("POST", oauth.AuthorizePath, f)
}

// consentCSRF reads the CSRF token of the consent page's forms.
func consentCSRF(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`id="oauth-decide-form">\s*<input type="hidden" name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the consent form:\n%s", body)
	}
	return m[1]
}

// answer parses the Location of a redirect back to the client and checks
// it goes to redirect.
func answer(t *testing.T, resp *http.Response, redirect string) url.Values {
	t.Helper()
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, redirect+"?") {
		t.Fatalf("status %d, Location %q: want a redirect to %s", resp.StatusCode, loc, redirect)
	}
	q, err := url.ParseQuery(loc[len(redirect)+1:])
	if err != nil {
		t.Fatal(err)
	}
	return q
}

var consentRowRe = regexp.MustCompile(`(?s)<li class="consent-project">.*?wants to <span class="verb">([^<]+)</span> <strong class="project">([^<]+)</strong>`)

// consentRows lists "verb project" for each row of the consent page.
func consentRows(body string) []string {
	var out []string
	for _, m := range consentRowRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}
