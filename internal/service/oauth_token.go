package service

import (
	"context"
	"crypto/subtle"
	"strings"

	"golang.org/x/oauth2"

	"munin/internal/memory"
)

// OAuthTokens is what the token endpoint hands a client.
type OAuthTokens struct {
	Access, Refresh string
	ExpiresIn       int // seconds the access token lives
	Scope           string
}

// OAuthCodeExchange is an authorization_code grant request (OAuth 2.1
// §4.1.3) as sent; the client was authenticated by the transport (a
// public client by its client_id alone).
type OAuthCodeExchange struct {
	ClientID, Code, Verifier, RedirectURI, Resource string
}

// ExchangeOAuthCode redeems a code once: it must be the client's, for the
// same redirect URI, its verifier must hash to the challenge (S256), and
// the resource, if named, must be the one consented to. A code is used up
// by the first try, right or wrong; a second use revokes its grant.
// Every refusal of the code is invalid_grant.
func (s *Service) ExchangeOAuthCode(ctx context.Context, req OAuthCodeExchange) (OAuthTokens, error) {
	o, err := s.oauth()
	if err != nil {
		return OAuthTokens{}, err
	}
	if req.Code == "" {
		return OAuthTokens{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "code is missing")
	}
	if err := s.knownOAuthClient(ctx, o, req.ClientID); err != nil {
		return OAuthTokens{}, err
	}
	if err := memory.ValidateCodeVerifier(req.Verifier); err != nil {
		return OAuthTokens{}, err
	}
	code, grant, err := o.Store.ConsumeOAuthCode(ctx, memory.HashToken(req.Code), s.opts.Now())
	if err != nil {
		return OAuthTokens{}, asInvalidGrant(err)
	}
	invalid := func(what string) (OAuthTokens, error) {
		return OAuthTokens{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidGrant, "%s", what)
	}
	switch {
	case grant.ClientID != req.ClientID:
		return invalid("the code was issued to another client")
	case code.RedirectURI != req.RedirectURI:
		return invalid("redirect_uri differs from the one of the authorization request")
	case subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(req.Verifier)), []byte(code.Challenge)) != 1:
		return invalid("code_verifier does not match the code_challenge")
	}
	if req.Resource != "" {
		if err := memory.ParseResource(req.Resource, grant.Resource); err != nil {
			return OAuthTokens{}, err
		}
	}
	return s.issueOAuthTokens(ctx, o, grant)
}

// knownOAuthClient refuses a token request of a client_id the server does
// not know (never fetched here: a client met the server at /authorize
// first) with invalid_client, which tells Claude to register again, before
// a code or refresh token is touched.
func (s *Service) knownOAuthClient(ctx context.Context, o *OAuthOptions, id string) error {
	if id == "" {
		return memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "client_id is missing")
	}
	_, err := o.Store.OAuthClient(ctx, id)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return memory.OAuthErrorf(memory.CodeUnauthorized, memory.OAuthInvalidClient, "client_id is not registered here; register again")
	}
	return err
}

// issueOAuthTokens stores and returns a new access and refresh token of
// grant.
func (s *Service) issueOAuthTokens(ctx context.Context, o *OAuthOptions, grant memory.OAuthGrant) (OAuthTokens, error) {
	t, access, refresh, err := s.newOAuthPair(grant.ID, grant.Scope)
	if err != nil {
		return OAuthTokens{}, err
	}
	if err := o.Store.PutOAuthTokens(ctx, access, refresh); err != nil {
		return OAuthTokens{}, err
	}
	return t, nil
}

// newOAuthPair draws an access and a refresh token of grant: the tokens
// for the client and the records (hashes) for the store.
func (s *Service) newOAuthPair(grant int64, scope string) (OAuthTokens, memory.OAuthToken, memory.OAuthToken, error) {
	var t OAuthTokens
	var err error
	if t.Access, err = newSecret(memory.OAuthAccessPrefix); err != nil {
		return t, memory.OAuthToken{}, memory.OAuthToken{}, err
	}
	if t.Refresh, err = newSecret(memory.OAuthRefreshPrefix); err != nil {
		return t, memory.OAuthToken{}, memory.OAuthToken{}, err
	}
	now := s.opts.Now()
	t.ExpiresIn, t.Scope = int(memory.OAuthAccessTTL.Seconds()), scope
	access := memory.OAuthToken{Hash: memory.HashToken(t.Access), GrantID: grant, Kind: memory.OAuthAccess, ExpiresAt: now.Add(memory.OAuthAccessTTL)}
	refresh := memory.OAuthToken{Hash: memory.HashToken(t.Refresh), GrantID: grant, Kind: memory.OAuthRefresh, ExpiresAt: now.Add(memory.OAuthRefreshTTL)}
	return t, access, refresh, nil
}

// OAuthRefresh is a refresh_token grant request as sent.
type OAuthRefresh struct {
	ClientID, RefreshToken, Resource, Scope string
}

// RefreshOAuth rotates a refresh token (OAuth 2.1 §4.3.1: public clients'
// refresh tokens are single use): the old one ends, a new pair of the same
// grant is returned. A refresh token used twice, or presented by another
// client, revokes its grant and every token of it. The scope may be
// omitted or narrowed, never widened (only memory exists).
func (s *Service) RefreshOAuth(ctx context.Context, req OAuthRefresh) (OAuthTokens, error) {
	o, err := s.oauth()
	if err != nil {
		return OAuthTokens{}, err
	}
	if req.RefreshToken == "" {
		return OAuthTokens{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "refresh_token is missing")
	}
	if err := s.knownOAuthClient(ctx, o, req.ClientID); err != nil {
		return OAuthTokens{}, err
	}
	if _, err := oauthScope(req.Scope); err != nil {
		return OAuthTokens{}, err
	}
	t, access, refresh, err := s.newOAuthPair(0, "")
	if err != nil {
		return OAuthTokens{}, err
	}
	grant, err := o.Store.RotateOAuthRefresh(ctx, memory.HashToken(req.RefreshToken), access, refresh, s.opts.Now())
	if err != nil {
		return OAuthTokens{}, asInvalidGrant(err)
	}
	if grant.ClientID != req.ClientID {
		// Another client holds this client's refresh token: it leaked.
		if err := o.Store.RevokeOAuthGrant(ctx, grant.ID); err != nil {
			return OAuthTokens{}, err
		}
		return OAuthTokens{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidGrant, "the refresh token was issued to another client; its grant is revoked")
	}
	if req.Resource != "" {
		if err := memory.ParseResource(req.Resource, grant.Resource); err != nil {
			return OAuthTokens{}, err
		}
	}
	t.Scope = grant.Scope
	return t, nil
}

// IsOAuthToken reports whether a bearer credential is an OAuth access
// token rather than a key list.
func IsOAuthToken(bearer string) bool {
	return strings.HasPrefix(strings.TrimSpace(bearer), memory.OAuthAccessPrefix)
}

// AuthenticateOAuth turns an access token into the caller of its grant's
// keys, for the resource it is presented to. Every key must still be
// live: a token never acts with fewer keys than it was given. A token of
// another resource (audience) is refused as an unknown one (RFC 8707,
// MCP authorization: servers MUST reject tokens not issued for them).
// The caller names the grant's client (memory.Caller.Client).
func (s *Service) AuthenticateOAuth(ctx context.Context, token, resource string) (memory.Caller, error) {
	o, err := s.oauth()
	if err != nil {
		return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "unknown, expired or revoked token")
	}
	token = strings.TrimSpace(token)
	if len(token) > memory.MaxKeyToken {
		return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "unknown, expired or revoked token")
	}
	grant, err := o.Store.OAuthAccess(ctx, memory.HashToken(token), s.opts.Now())
	if err != nil {
		return memory.Caller{}, err
	}
	if memory.ParseResource(resource, grant.Resource) != nil {
		return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "unknown, expired or revoked token")
	}
	keys := make([]memory.Key, 0, len(grant.KeyIDs))
	for _, id := range grant.KeyIDs {
		k, err := s.store.KeyByID(ctx, id)
		if memory.ErrorCode(err) == memory.CodeNotFound || (err == nil && k.Revoked) {
			return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "unknown, expired or revoked token")
		}
		if err != nil {
			return memory.Caller{}, err
		}
		keys = append(keys, k)
	}
	// The client's name rides on the caller so that every write records it
	// in the audit log beside the key's agent (issue 25: the same audit
	// trail as the keys, and which app acted).
	return memory.NewCaller(keys...).WithClient(grant.ClientName), nil
}
