package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

const (
	mcpResource  = "https://munin.example.com/mcp"
	restResource = "https://munin.example.com/api/v1"
	redirect     = "https://claude.ai/api/mcp/auth_callback"
)

// oauthEnv is a server with OAuth on, a person's two keys (acme/a write,
// acme/b read), a server-admin key and one registered client.
type oauthEnv struct {
	env      *servicetest.Env
	clock    *movableClock
	person   memory.Caller
	admin    memory.Caller
	tokA     string
	client   memory.OAuthClient
	verifier string
}

func newOAuthEnv(t *testing.T) *oauthEnv {
	t.Helper()
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now, OAuth: &service.OAuthOptions{
		Resources: []string{mcpResource, restResource}, Fetcher: fakeFetcher{}}})
	tokA, _ := env.Key(t, "acme", "a", "alice", memory.RoleWrite)
	tokB, _ := env.Key(t, "acme", "b", "alice", memory.RoleRead)
	adminTok, _, err := env.Svc.CreateServerAdminKey(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	client, err := env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: "Claude", RedirectURIs: []string{redirect},
		GrantTypes: []string{"authorization_code", "refresh_token"}})
	if err != nil {
		t.Fatal(err)
	}
	return &oauthEnv{env: env, clock: clock, person: env.Caller(t, tokA, tokB), admin: env.Caller(t, adminTok), tokA: tokA,
		client: client, verifier: oauth2.GenerateVerifier()}
}

// request is a good authorization request of the client.
func (e *oauthEnv) request() service.OAuthRequest {
	return service.OAuthRequest{ClientID: e.client.ID, RedirectURI: redirect, ResponseType: "code", State: "s1",
		CodeChallenge: oauth2.S256ChallengeFromVerifier(e.verifier), CodeChallengeMethod: "S256", Resource: mcpResource}
}

// signIn authorizes the request as the person and redeems the code.
func (e *oauthEnv) signIn(t *testing.T) service.OAuthTokens {
	t.Helper()
	code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request())
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	tok, err := e.env.Svc.ExchangeOAuthCode(ctx, service.OAuthCodeExchange{ClientID: e.client.ID, Code: code,
		Verifier: e.verifier, RedirectURI: redirect, Resource: mcpResource})
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// fakeFetcher knows one metadata document URL.
type fakeFetcher struct{}

const cimdURL = "https://client.example.com/oauth/metadata.json"

func (fakeFetcher) Client(_ context.Context, id string) (memory.OAuthClient, error) {
	if id != cimdURL {
		return memory.OAuthClient{}, memory.Errorf(memory.CodeInvalid, "client metadata document: status 404")
	}
	return memory.OAuthClient{ID: id, Kind: memory.OAuthClientCIMD, Name: "Example", RedirectURIs: []string{"http://127.0.0.1/callback"}}, nil
}

func oauthName(err error) string { return memory.OAuthErrorCode(err) }

// TestOAuthSignInActsAsTheKeys: the whole flow — a token acts as exactly
// the keys signed in with, only for the resource it was issued for; a
// refresh rotates; a refresh token used twice ends the grant.
func TestOAuthSignInActsAsTheKeys(t *testing.T) {
	e := newOAuthEnv(t)
	tok := e.signIn(t)
	if !service.IsOAuthToken(tok.Access) || tok.ExpiresIn != int(memory.OAuthAccessTTL.Seconds()) || tok.Scope != "memory" {
		t.Fatalf("tokens %+v", tok)
	}
	c, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	got, want := c.Keys(), e.person.Keys()
	if len(got) != len(want) {
		t.Fatalf("token acts as %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Role != want[i].Role || got[i].Agent != want[i].Agent || got[i].Project != want[i].Project {
			t.Errorf("key %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, restResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("token of %s at %s: %v, want unauthorized", mcpResource, restResource, err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Refresh, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("refresh token used as access token: %v, want unauthorized", err)
	}

	next, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: e.client.ID, RefreshToken: tok.Refresh})
	if err != nil || next.Access == tok.Access || next.Refresh == tok.Refresh {
		t.Fatalf("refresh: %+v %v", next, err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, next.Access, mcpResource); err != nil {
		t.Fatalf("refreshed token: %v", err)
	}
	_, err = e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: e.client.ID, RefreshToken: tok.Refresh})
	if oauthName(err) != "invalid_grant" {
		t.Fatalf("refresh token used twice: %v, want invalid_grant", err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, next.Access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("after a reused refresh token the grant's tokens still work: %v", err)
	}
}

// TestOAuthRevokedKeyEndsTokens: revoking one of the keys signed in with
// ends the access token and the refresh token at once — never a caller
// with fewer keys.
func TestOAuthRevokedKeyEndsTokens(t *testing.T) {
	e := newOAuthEnv(t)
	tok := e.signIn(t)
	if err := e.env.Svc.RevokeKey(ctx, e.person.Keys()[1].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("access token after its key was revoked: %v, want unauthorized", err)
	}
	if _, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: e.client.ID, RefreshToken: tok.Refresh}); oauthName(err) != "invalid_grant" {
		t.Errorf("refresh after its key was revoked: %v, want invalid_grant", err)
	}
}

// TestOAuthCodeExchangeRefusals: each wrong exchange is refused with the
// error the token endpoint must send, and a code works at most once: its
// reuse ends the tokens of the first exchange.
func TestOAuthCodeExchangeRefusals(t *testing.T) {
	e := newOAuthEnv(t)
	other, err := e.env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: "Other", RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*service.OAuthCodeExchange)
		want string
	}{
		{"wrong verifier", func(x *service.OAuthCodeExchange) { x.Verifier = oauth2.GenerateVerifier() }, "invalid_grant"},
		{"another client", func(x *service.OAuthCodeExchange) { x.ClientID = other.ID }, "invalid_grant"},
		{"another redirect", func(x *service.OAuthCodeExchange) { x.RedirectURI = redirect + "x" }, "invalid_grant"},
		{"verifier too short", func(x *service.OAuthCodeExchange) { x.Verifier = "abc" }, "invalid_request"},
		{"another resource", func(x *service.OAuthCodeExchange) { x.Resource = restResource }, "invalid_target"},
		{"unknown code", func(x *service.OAuthCodeExchange) { x.Code = memory.OAuthCodePrefix + "nope" }, "invalid_grant"},
	} {
		code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request())
		if err != nil {
			t.Fatal(err)
		}
		x := service.OAuthCodeExchange{ClientID: e.client.ID, Code: code, Verifier: e.verifier, RedirectURI: redirect, Resource: mcpResource}
		tc.edit(&x)
		if _, err := e.env.Svc.ExchangeOAuthCode(ctx, x); oauthName(err) != tc.want {
			t.Errorf("%s: %v (%s), want %s", tc.name, err, oauthName(err), tc.want)
		}
	}

	// Expired: a code lives memory.OAuthCodeTTL.
	code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request())
	if err != nil {
		t.Fatal(err)
	}
	e.clock.add(memory.OAuthCodeTTL + time.Second)
	if _, err := e.env.Svc.ExchangeOAuthCode(ctx, service.OAuthCodeExchange{ClientID: e.client.ID, Code: code, Verifier: e.verifier, RedirectURI: redirect}); oauthName(err) != "invalid_grant" {
		t.Errorf("expired code: %v, want invalid_grant", err)
	}

	// Reused: the second exchange fails and the first one's tokens end.
	code, err = e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request())
	if err != nil {
		t.Fatal(err)
	}
	x := service.OAuthCodeExchange{ClientID: e.client.ID, Code: code, Verifier: e.verifier, RedirectURI: redirect}
	tok, err := e.env.Svc.ExchangeOAuthCode(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.env.Svc.ExchangeOAuthCode(ctx, x); oauthName(err) != "invalid_grant" {
		t.Errorf("code used twice: %v, want invalid_grant", err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("token of a reused code: %v, want unauthorized", err)
	}
}

// TestOAuthRequestChecks: an unknown client or a redirect URI it did not
// register is shown to the person (redirect false); every later mistake
// goes back to the client with its OAuth error name.
func TestOAuthRequestChecks(t *testing.T) {
	e := newOAuthEnv(t)
	for _, tc := range []struct {
		name     string
		edit     func(*service.OAuthRequest)
		redirect bool
		want     string
	}{
		{"unknown client", func(r *service.OAuthRequest) { r.ClientID = "nobody" }, false, "invalid_client"},
		{"no client", func(r *service.OAuthRequest) { r.ClientID = "" }, false, "invalid_request"},
		{"unregistered redirect", func(r *service.OAuthRequest) { r.RedirectURI = "https://evil.example/cb" }, false, "invalid_request"},
		{"no redirect", func(r *service.OAuthRequest) { r.RedirectURI = "" }, false, "invalid_request"},
		{"metadata document that fails", func(r *service.OAuthRequest) { r.ClientID = "https://other.example.com/meta.json" }, false, "invalid_client"},
		{"implicit flow", func(r *service.OAuthRequest) { r.ResponseType = "token" }, true, "unsupported_response_type"},
		{"no PKCE", func(r *service.OAuthRequest) { r.CodeChallenge, r.CodeChallengeMethod = "", "" }, true, "invalid_request"},
		{"plain PKCE", func(r *service.OAuthRequest) { r.CodeChallengeMethod = "plain" }, true, "invalid_request"},
		{"another server", func(r *service.OAuthRequest) { r.Resource = "https://elsewhere.example/mcp" }, true, "invalid_target"},
		{"unknown scope", func(r *service.OAuthRequest) { r.Scope = "memory admin" }, true, "invalid_scope"},
	} {
		r := e.request()
		tc.edit(&r)
		_, redirect, err := e.env.Svc.CheckOAuthRequest(ctx, r)
		if err == nil || redirect != tc.redirect || oauthName(err) != tc.want {
			t.Errorf("%s: redirect %v, %v (%s); want redirect %v, %s", tc.name, redirect, err, oauthName(err), tc.redirect, tc.want)
		}
	}
	r := e.request()
	r.Resource, r.Scope = "", ""
	a, _, err := e.env.Svc.CheckOAuthRequest(ctx, r)
	if err != nil || a.Resource != mcpResource || len(a.Scope) != 1 || a.Scope[0] != "memory" {
		t.Errorf("request without resource and scope: %+v %v; want the first resource and scope memory", a, err)
	}
}

// TestOAuthClientByMetadataDocument: a client_id that is an https URL is
// found through the fetcher and stored, so that its grant names it.
func TestOAuthClientByMetadataDocument(t *testing.T) {
	e := newOAuthEnv(t)
	r := e.request()
	r.ClientID, r.RedirectURI = cimdURL, "http://127.0.0.1:53117/callback" // any loopback port
	code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, r)
	if err != nil {
		t.Fatalf("authorize a CIMD client: %v", err)
	}
	if _, err := e.env.Svc.ExchangeOAuthCode(ctx, service.OAuthCodeExchange{ClientID: cimdURL, Code: code, Verifier: e.verifier, RedirectURI: r.RedirectURI}); err != nil {
		t.Fatalf("exchange: %v", err)
	}
}

// TestOAuthRefusesWhatIsNotTheClients: a server-admin key is not handed
// to a client; a refresh token presented by another client ends its grant.
func TestOAuthRefusesWhatIsNotTheClients(t *testing.T) {
	e := newOAuthEnv(t)
	if _, err := e.env.Svc.AuthorizeOAuth(ctx, e.admin, e.request()); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("server-admin sign-in: %v, want forbidden", err)
	}
	if _, err := e.env.Svc.AuthorizeOAuth(ctx, memory.Caller{}, e.request()); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("no caller: %v, want unauthorized", err)
	}
	tok := e.signIn(t)
	thief, err := e.env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: "Thief", RedirectURIs: []string{"https://thief.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: thief.ID, RefreshToken: tok.Refresh}); oauthName(err) != "invalid_grant" {
		t.Errorf("refresh by another client: %v, want invalid_grant", err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("after a refresh by another client the grant lives on: %v", err)
	}
}

// TestOAuthOff: without a public URL every OAuth call is refused and no
// token authenticates.
func TestOAuthOff(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	if env.Svc.OAuthEnabled() {
		t.Fatal("OAuth on without options")
	}
	if _, err := env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: "x", RedirectURIs: []string{redirect}}); err == nil {
		t.Error("registration accepted with OAuth off")
	}
	_, err := env.Svc.AuthenticateOAuth(ctx, memory.OAuthAccessPrefix+"x", mcpResource)
	if memory.ErrorCode(err) != memory.CodeUnauthorized || errors.Is(err, context.Canceled) {
		t.Errorf("token with OAuth off: %v, want unauthorized", err)
	}
}
