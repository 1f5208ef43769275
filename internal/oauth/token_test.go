package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
	"munin/internal/servicetest"
)

const (
	mcpResource = "https://munin.example.com/mcp"
	redirect    = "https://claude.ai/api/mcp/auth_callback"
)

var ctx = context.Background()

// tokenEnv is a real service with OAuth on behind the endpoints on an
// httptest server, a person's key (acme/a write) and a log to read.
type tokenEnv struct {
	env    *servicetest.Env
	srv    *httptest.Server
	person memory.Caller
	logs   *bytes.Buffer
}

func newTokenEnv(t *testing.T) *tokenEnv {
	t.Helper()
	env := servicetest.New(t, service.Options{OAuth: &service.OAuthOptions{Resources: []string{mcpResource}}})
	_, person := env.Key(t, "acme", "a", "alice", memory.RoleWrite)
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv := httptestServer(t, oauth.Endpoints(oauth.Config{PublicURL: "https://munin.example.com"}, env.Svc, log))
	return &tokenEnv{env: env, srv: srv, person: person, logs: logs}
}

// httptestServer serves h until the test ends.
func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// client registers a client over HTTP, as an MCP host does, and returns
// its id.
func (e *tokenEnv) client(t *testing.T) string {
	t.Helper()
	res, body := e.post(t, oauth.RegisterPath, "application/json",
		`{"client_name":"Claude","redirect_uris":["`+redirect+`"],"grant_types":["authorization_code","refresh_token"]}`, nil)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", res.StatusCode, body)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(body, &reg); err != nil || reg.ClientID == "" {
		t.Fatalf("register: %s (%v)", body, err)
	}
	return reg.ClientID
}

// code is an authorization code of client for the person's consent, with
// the PKCE challenge of verifier.
func (e *tokenEnv) code(t *testing.T, client, verifier string) string {
	t.Helper()
	code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, service.OAuthRequest{ClientID: client, RedirectURI: redirect,
		ResponseType: "code", State: "s", CodeChallenge: oauth2.S256ChallengeFromVerifier(verifier),
		CodeChallengeMethod: "S256", Resource: mcpResource})
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	return code
}

// post sends body with the content type to path; edit may change the
// request first.
func (e *tokenEnv) post(t *testing.T, path, ctype, body string, edit func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if edit != nil {
		edit(req)
	}
	return e.do(t, req)
}

func (e *tokenEnv) do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// token posts form to the token endpoint.
func (e *tokenEnv) token(t *testing.T, form url.Values) (*http.Response, []byte) {
	t.Helper()
	return e.post(t, oauth.TokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
}

// exchange is the token request that redeems code.
func exchange(client, code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {redirect}, "resource": {mcpResource}}
}

// oauthError is the error name of an OAuth error body, "" if there is none.
func oauthError(body []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil || e.Description == "" {
		return ""
	}
	return e.Error
}

// checkHeaders: every answer of the endpoints is uncacheable and readable
// by a browser-based client of any origin.
func checkHeaders(t *testing.T, what string, res *http.Response) {
	t.Helper()
	h := res.Header
	if h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" {
		t.Errorf("%s: Cache-Control %q, Pragma %q; want no-store, no-cache", what, h.Get("Cache-Control"), h.Get("Pragma"))
	}
	if h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want *", what, h.Get("Access-Control-Allow-Origin"))
	}
	if h.Get("Access-Control-Expose-Headers") != "WWW-Authenticate, Retry-After" {
		t.Errorf("%s: Access-Control-Expose-Headers %q, want WWW-Authenticate, Retry-After", what, h.Get("Access-Control-Expose-Headers"))
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
}

// TestTokenFlowWithStandardClient: golang.org/x/oauth2 as the client —
// it redeems a code with its verifier and refreshes an expired token
// against the endpoint, so a standard client reads our answers; the
// tokens act as the person's key.
func TestTokenFlowWithStandardClient(t *testing.T) {
	e := newTokenEnv(t)
	client := e.client(t)
	verifier := oauth2.GenerateVerifier()
	code := e.code(t, client, verifier)
	cfg := oauth2.Config{ClientID: client, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{TokenURL: e.srv.URL + oauth.TokenPath, AuthStyle: oauth2.AuthStyleInParams}}
	cctx := context.WithValue(ctx, oauth2.HTTPClient, e.srv.Client())
	tok, err := cfg.Exchange(cctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", mcpResource))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Expiry.IsZero() || tok.ExpiresIn != int64(memory.OAuthAccessTTL.Seconds()) || tok.Extra("scope") != "memory" {
		t.Fatalf("token %+v, scope %v", tok, tok.Extra("scope"))
	}
	c, err := e.env.Svc.AuthenticateOAuth(ctx, tok.AccessToken, mcpResource)
	if err != nil || len(c.Keys()) != 1 || c.Keys()[0].ID != e.person.Keys()[0].ID {
		t.Fatalf("access token acts as %+v, %v; want the person's key", c.Keys(), err)
	}

	old := *tok
	tok.Expiry = time.Now().Add(-time.Minute) // the client must refresh
	next, err := cfg.TokenSource(cctx, tok).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if next.AccessToken == old.AccessToken || next.RefreshToken == old.RefreshToken || next.RefreshToken == "" {
		t.Fatalf("refresh did not rotate: %+v", next)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, next.AccessToken, mcpResource); err != nil {
		t.Fatalf("refreshed access token: %v", err)
	}

	// The old refresh token again: refused, and its whole grant ends.
	_, err = cfg.TokenSource(cctx, &oauth2.Token{RefreshToken: old.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.Response.StatusCode != http.StatusBadRequest {
		t.Fatalf("refresh token used twice: %v; want 400 invalid_grant", err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, next.AccessToken, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("after a reused refresh token the grant's newest access token still works: %v", err)
	}
}

// TestTokenResponseHeaders: a token answer is never cached (RFC 6749
// §5.1) and a browser-based client may read it.
func TestTokenResponseHeaders(t *testing.T) {
	e := newTokenEnv(t)
	client := e.client(t)
	verifier := oauth2.GenerateVerifier()
	res, body := e.token(t, exchange(client, e.code(t, client, verifier), verifier))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("exchange: %d %s", res.StatusCode, body)
	}
	checkHeaders(t, "token", res)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"access_token", "token_type", "expires_in", "refresh_token", "scope"} {
		if _, ok := got[k]; !ok {
			t.Errorf("token response lacks %s: %s", k, body)
		}
	}
}

// TestTokenCodeReuse: a code works once; the second exchange is
// invalid_grant and ends the tokens of the first.
func TestTokenCodeReuse(t *testing.T) {
	e := newTokenEnv(t)
	client := e.client(t)
	verifier := oauth2.GenerateVerifier()
	form := exchange(client, e.code(t, client, verifier), verifier)
	first := e.granted(t, form)
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, first.AccessToken, mcpResource); err != nil {
		t.Fatalf("first token: %v", err)
	}
	e.replayed(t, "code used twice", form, first.AccessToken)
}

// tokens is a successful token response as a client reads it.
type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// granted posts form to the token endpoint, which must answer with tokens.
func (e *tokenEnv) granted(t *testing.T, form url.Values) tokens {
	t.Helper()
	res, body := e.token(t, form)
	var tok tokens
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token request %s: %d %s", form.Get("grant_type"), res.StatusCode, body)
	}
	return tok
}

// replayed posts a form whose code or refresh token was used before: it
// must be 400 invalid_grant, and the grant's access token must end with
// it.
func (e *tokenEnv) replayed(t *testing.T, what string, form url.Values, access string) {
	t.Helper()
	res, body := e.token(t, form)
	if res.StatusCode != http.StatusBadRequest || oauthError(body) != "invalid_grant" {
		t.Fatalf("%s: %d %s; want 400 invalid_grant", what, res.StatusCode, body)
	}
	checkHeaders(t, what, res)
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("%s: the grant's access token still authenticates: %v", what, err)
	}
}

// TestTokenRefusals: each bad token request gets its OAuth error name and
// status. A refusal of the request's form (before the service) leaves the
// code usable: a client that fixes its request can still redeem it.
func TestTokenRefusals(t *testing.T) {
	e := newTokenEnv(t)
	client, other := e.client(t), e.client(t)
	for _, tc := range []struct {
		name   string
		edit   func(url.Values)
		ctype  string
		req    func(*http.Request)
		status int
		want   string
		usable bool // the code still redeems after the refusal
	}{
		{name: "verifier missing", edit: func(f url.Values) { f.Del("code_verifier") }, status: 400, want: "invalid_request"},
		{name: "wrong verifier", edit: func(f url.Values) { f.Set("code_verifier", oauth2.GenerateVerifier()) }, status: 400, want: "invalid_grant"},
		{name: "code of another client", edit: func(f url.Values) { f.Set("client_id", other) }, status: 400, want: "invalid_grant"},
		{name: "redirect URI mismatch", edit: func(f url.Values) { f.Set("redirect_uri", redirect+"/x") }, status: 400, want: "invalid_grant"},
		{name: "another resource", edit: func(f url.Values) { f.Set("resource", "https://elsewhere.example/mcp") }, status: 400, want: "invalid_target"},
		{name: "code missing", edit: func(f url.Values) { f.Del("code") }, status: 400, want: "invalid_request", usable: true},
		{name: "JSON body", ctype: "application/json", status: 400, want: "invalid_request", usable: true},
		{name: "no content type", ctype: "-", status: 400, want: "invalid_request", usable: true},
		{name: "parameter twice", edit: func(f url.Values) { f.Add("code_verifier", f.Get("code_verifier")) }, status: 400, want: "invalid_request", usable: true},
		{name: "unknown grant type", edit: func(f url.Values) { f.Set("grant_type", "password") }, status: 400, want: "unsupported_grant_type", usable: true},
		{name: "grant type missing", edit: func(f url.Values) { f.Del("grant_type") }, status: 400, want: "invalid_request", usable: true},
		{name: "client_id missing", edit: func(f url.Values) { f.Del("client_id") }, status: 400, want: "invalid_request", usable: true},
		{name: "client_secret sent", edit: func(f url.Values) { f.Set("client_secret", "s3cret") }, status: 401, want: "invalid_client", usable: true},
		{name: "Basic auth", req: func(r *http.Request) { r.SetBasicAuth("x", "s3cret") }, status: 401, want: "invalid_client", usable: true},
		{name: "body too large", edit: func(f url.Values) { f.Set("state", strings.Repeat("x", oauth.MaxBodyBytes)) }, status: 400, want: "invalid_request", usable: true},
	} {
		verifier := oauth2.GenerateVerifier()
		good := exchange(client, e.code(t, client, verifier), verifier)
		form := url.Values{}
		for k, v := range good {
			form[k] = append([]string(nil), v...)
		}
		if tc.edit != nil {
			tc.edit(form)
		}
		ctype := "application/x-www-form-urlencoded"
		if tc.ctype != "" {
			ctype = tc.ctype
		}
		res, body := e.post(t, oauth.TokenPath, ctype, form.Encode(), func(r *http.Request) {
			if ctype == "-" {
				r.Header.Del("Content-Type")
			}
			if tc.req != nil {
				tc.req(r)
			}
		})
		if res.StatusCode != tc.status || oauthError(body) != tc.want {
			t.Errorf("%s: %d %s; want %d %s", tc.name, res.StatusCode, body, tc.status, tc.want)
			continue
		}
		checkHeaders(t, tc.name, res)
		if tc.status == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%s: WWW-Authenticate %q; want a Basic challenge (RFC 6749 §5.2)", tc.name, res.Header.Get("WWW-Authenticate"))
		}
		if tc.usable {
			if res, body := e.token(t, good); res.StatusCode != http.StatusOK {
				t.Errorf("%s: the refused request used up the code: %d %s", tc.name, res.StatusCode, body)
			}
		}
	}
}

// TestRefreshRefusals: a refresh token used twice is invalid_grant and
// ends the grant; an unknown one is invalid_grant; one without client_id
// is refused before it can end its grant.
func TestRefreshRefusals(t *testing.T) {
	e := newTokenEnv(t)
	client := e.client(t)
	verifier := oauth2.GenerateVerifier()
	tok := e.granted(t, exchange(client, e.code(t, client, verifier), verifier))
	refresh := func(rt string) url.Values {
		return url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {rt}}
	}
	noClient := refresh(tok.RefreshToken)
	noClient.Del("client_id")
	if res, body := e.token(t, noClient); res.StatusCode != 400 || oauthError(body) != "invalid_request" {
		t.Errorf("refresh without client_id: %d %s; want 400 invalid_request", res.StatusCode, body)
	}
	if res, body := e.token(t, refresh(memory.OAuthRefreshPrefix+"unknown")); res.StatusCode != 400 || oauthError(body) != "invalid_grant" {
		t.Errorf("unknown refresh token: %d %s; want 400 invalid_grant", res.StatusCode, body)
	}
	next := e.granted(t, refresh(tok.RefreshToken))
	e.replayed(t, "refresh token used twice", refresh(tok.RefreshToken), next.AccessToken)
}

// TestTokenServerError: a failure of the server is 500 server_error with
// no detail, logged without the request's code or verifier.
func TestTokenServerError(t *testing.T) {
	e := newTokenEnv(t)
	client := e.client(t)
	verifier := oauth2.GenerateVerifier()
	code := e.code(t, client, verifier)
	if err := e.env.Store.Close(); err != nil {
		t.Fatal(err)
	}
	res, body := e.token(t, exchange(client, code, verifier))
	if res.StatusCode != http.StatusInternalServerError || oauthError(body) != "server_error" || strings.Contains(string(body), "sql") {
		t.Fatalf("exchange on a closed store: %d %s; want 500 server_error without details", res.StatusCode, body)
	}
	checkHeaders(t, "server error", res)
	logs := e.logs.String()
	if !strings.Contains(logs, oauth.TokenPath) {
		t.Errorf("the failure was not logged: %q", logs)
	}
	for _, secret := range []string{code, verifier, strings.TrimPrefix(code, memory.KeyPrefix)} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret of the request: %q", logs)
		}
	}
}
