package service_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestOAuthRegistrationFloodBounded: registration takes no key, so the
// clients registered in a day that nobody signed in with are bounded;
// past the bound a registration is refused (unavailable, retry later)
// and stores nothing, a client people sign in with stops counting, and a
// day later the unused ones are pruned and registration opens again.
func TestOAuthRegistrationFloodBounded(t *testing.T) {
	e := newOAuthEnv(t) // registered one client already
	reg := func(i int) error {
		_, err := e.env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: fmt.Sprint("flood ", i), RedirectURIs: []string{"https://flood.example/cb"}})
		return err
	}
	for i := 1; i < memory.OAuthMaxNewClients; i++ {
		if err := reg(i); err != nil {
			t.Fatalf("registration %d of %d: %v", i+1, memory.OAuthMaxNewClients, err)
		}
	}
	err := reg(memory.OAuthMaxNewClients)
	var me *memory.Error
	if memory.ErrorCode(err) != memory.CodeUnavailable || !errors.As(err, &me) || me.RetryAfter <= 0 {
		t.Fatalf("registration past the bound: %v; want unavailable with Retry-After", err)
	}
	// A client people use no longer counts.
	e.signIn(t)
	if err := reg(0); err != nil {
		t.Fatalf("registration after a sign-in freed a place: %v", err)
	}
	if err := reg(0); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("registration past the bound again: %v", err)
	}
	// A day on, a sign-in prunes the unused ones; the used client stays.
	e.clock.add(25 * time.Hour)
	e.signIn(t)
	if err := reg(0); err != nil {
		t.Fatalf("registration a day later: %v", err)
	}
}

// TestOAuthTokensExpire: an access token ends after memory.OAuthAccessTTL
// (refreshing gives a new one), a refresh token after
// memory.OAuthRefreshTTL, and nothing outlives the sign-in.
func TestOAuthTokensExpire(t *testing.T) {
	e := newOAuthEnv(t)
	tok := e.signIn(t)
	e.clock.add(memory.OAuthAccessTTL + time.Second)
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("access token past its lifetime: %v, want unauthorized", err)
	}
	next, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: e.client.ID, RefreshToken: tok.Refresh})
	if err != nil {
		t.Fatalf("refresh after the access token expired: %v", err)
	}
	if _, err := e.env.Svc.AuthenticateOAuth(ctx, next.Access, mcpResource); err != nil {
		t.Fatalf("refreshed access token: %v", err)
	}
	e.clock.add(memory.OAuthRefreshTTL + time.Second)
	if _, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: e.client.ID, RefreshToken: next.Refresh}); memory.OAuthErrorCode(err) != "invalid_grant" {
		t.Fatalf("refresh token past its lifetime: %v, want invalid_grant", err)
	}
}

// TestOAuthTokenOfUnknownClient: a token request naming a client the
// server does not know is invalid_client (Claude registers again on it)
// and touches no code: the right client can still redeem it.
func TestOAuthTokenOfUnknownClient(t *testing.T) {
	e := newOAuthEnv(t)
	code, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request())
	if err != nil {
		t.Fatal(err)
	}
	x := service.OAuthCodeExchange{ClientID: "gone", Code: code, Verifier: e.verifier, RedirectURI: redirect}
	if _, err := e.env.Svc.ExchangeOAuthCode(ctx, x); memory.OAuthErrorCode(err) != "invalid_client" {
		t.Fatalf("exchange by an unknown client: %v, want invalid_client", err)
	}
	if _, err := e.env.Svc.RefreshOAuth(ctx, service.OAuthRefresh{ClientID: "gone", RefreshToken: memory.OAuthRefreshPrefix + "x"}); memory.OAuthErrorCode(err) != "invalid_client" {
		t.Fatalf("refresh by an unknown client: %v, want invalid_client", err)
	}
	x.ClientID = e.client.ID
	if _, err := e.env.Svc.ExchangeOAuthCode(ctx, x); err != nil {
		t.Fatalf("the code after an unknown client's try: %v", err)
	}
}
