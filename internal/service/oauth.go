package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"munin/internal/memory"
)

// OAuth sign-in (docs/security.md): a person signs in with Munin keys and
// consents; the client then holds tokens that act exactly as those keys —
// the same projects, roles, agent names and limits — until a key or the
// grant is revoked. The service checks every request of the flow and is
// the only place that decides; internal/oauth translates HTTP.

// OAuthStore is what OAuth needs of the control data; *store.Store
// implements it. Codes and tokens are kept as memory.HashToken only.
type OAuthStore interface {
	PutOAuthClient(ctx context.Context, c memory.OAuthClient) error
	OAuthClient(ctx context.Context, id string) (memory.OAuthClient, error)
	CreateOAuthGrant(ctx context.Context, g memory.OAuthGrant) (int64, error)
	RevokeOAuthGrant(ctx context.Context, id int64) error
	PutOAuthCode(ctx context.Context, c memory.OAuthCode) error
	ConsumeOAuthCode(ctx context.Context, hash string, now time.Time) (memory.OAuthCode, memory.OAuthGrant, error)
	PutOAuthTokens(ctx context.Context, tokens ...memory.OAuthToken) error
	OAuthAccess(ctx context.Context, hash string, now time.Time) (memory.OAuthGrant, error)
	RotateOAuthRefresh(ctx context.Context, oldHash string, access, refresh memory.OAuthToken, now time.Time) (memory.OAuthGrant, error)
	// CountNewOAuthClients counts the clients registered or fetched since
	// then that nobody signed in with yet.
	CountNewOAuthClients(ctx context.Context, since time.Time) (int, error)
	// PruneOAuth deletes a bounded batch of expired codes and tokens and
	// long-dead grants and returns how many rows went.
	PruneOAuth(ctx context.Context, now time.Time) (int64, error)
}

// ClientMetadataFetcher finds a client by the URL of its Client ID Metadata
// Document (internal/clientmeta): fetched safely, checked and cached.
type ClientMetadataFetcher interface {
	Client(ctx context.Context, clientID string) (memory.OAuthClient, error)
}

// OAuthOptions switch OAuth sign-in on (Options.OAuth).
type OAuthOptions struct {
	// Store keeps clients, grants, codes and tokens.
	Store OAuthStore
	// Fetcher finds clients whose client_id is an https URL (CIMD); nil:
	// such clients are unknown.
	Fetcher ClientMetadataFetcher
	// Resources are the canonical URLs a token may be bound to (RFC 8707),
	// e.g. https://munin.example.com/mcp; the first is the default when a
	// request names none.
	Resources []string
}

// errOAuthOff answers every OAuth call of a server without a public URL.
var errOAuthOff = memory.Errorf(memory.CodeNotFound, "OAuth sign-in is off: the server has no public URL (--public-url)")

// oauth returns the OAuth options, or errOAuthOff.
func (s *Service) oauth() (*OAuthOptions, error) {
	if s.opts.OAuth == nil || s.opts.OAuth.Store == nil || len(s.opts.OAuth.Resources) == 0 {
		return nil, errOAuthOff
	}
	return s.opts.OAuth, nil
}

// OAuthEnabled reports whether the server signs OAuth clients in.
func (s *Service) OAuthEnabled() bool {
	_, err := s.oauth()
	return err == nil
}

// RegisterOAuthClient stores a client that registered itself (RFC 7591):
// a public client with a random id.
func (s *Service) RegisterOAuthClient(ctx context.Context, reg memory.ClientRegistration) (memory.OAuthClient, error) {
	o, err := s.oauth()
	if err != nil {
		return memory.OAuthClient{}, err
	}
	if err := s.checkNewOAuthClients(ctx, o); err != nil {
		return memory.OAuthClient{}, err
	}
	id, err := newSecret("munin_dcr_")
	if err != nil {
		return memory.OAuthClient{}, err
	}
	c := memory.OAuthClient{ID: strings.TrimPrefix(id, memory.KeyPrefix), Kind: memory.OAuthClientDCR, Name: reg.Name,
		RedirectURIs: reg.RedirectURIs, CreatedAt: s.opts.Now()}
	if err := o.Store.PutOAuthClient(ctx, c); err != nil {
		return memory.OAuthClient{}, err
	}
	return c, nil
}

// checkNewOAuthClients refuses a new client while the day's unused ones
// are at memory.OAuthMaxNewClients: registration takes no key, so this
// bounds what an anonymous flood stores. Clients people sign in with do
// not count, so a flood delays new apps by at most a day and never ends a
// working sign-in.
func (s *Service) checkNewOAuthClients(ctx context.Context, o *OAuthOptions) error {
	n, err := o.Store.CountNewOAuthClients(ctx, s.opts.Now().Add(-24*time.Hour))
	if err != nil {
		return err
	}
	if n >= memory.OAuthMaxNewClients {
		e := memory.Errorf(memory.CodeUnavailable, "%d clients registered in the last day are not used yet; registration is paused, try again later", n)
		e.RetryAfter = time.Hour
		return e
	}
	return nil
}

// OAuthClient finds a client: by its metadata document when the id is an
// https URL (stored, so that its grants name it), else among the
// registered and configured ones. Unknown: invalid_client.
func (s *Service) OAuthClient(ctx context.Context, id string) (memory.OAuthClient, error) {
	o, err := s.oauth()
	if err != nil {
		return memory.OAuthClient{}, err
	}
	if id == "" {
		return memory.OAuthClient{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "client_id is missing")
	}
	if strings.HasPrefix(id, "https://") {
		if o.Fetcher == nil {
			return memory.OAuthClient{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidClient, "client metadata documents are not accepted by this server")
		}
		c, err := o.Fetcher.Client(ctx, id)
		if err != nil {
			if memory.ErrorCode(err) == memory.CodeInternal {
				return memory.OAuthClient{}, err
			}
			return memory.OAuthClient{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidClient, "client %s: %s", id, memory.PublicText(err))
		}
		if _, err := o.Store.OAuthClient(ctx, id); memory.ErrorCode(err) == memory.CodeNotFound {
			if err := s.checkNewOAuthClients(ctx, o); err != nil {
				return memory.OAuthClient{}, err
			}
		}
		c.CreatedAt = s.opts.Now()
		if err := o.Store.PutOAuthClient(ctx, c); err != nil {
			return memory.OAuthClient{}, err
		}
		return c, nil
	}
	c, err := o.Store.OAuthClient(ctx, id)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return memory.OAuthClient{}, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidClient, "client_id is not registered here")
	}
	return c, err
}

// OAuthRequest is an authorization request as the client sent it.
type OAuthRequest struct {
	ClientID, RedirectURI, ResponseType, State string
	CodeChallenge, CodeChallengeMethod         string
	Resource, Scope                            string
}

// OAuthAuthorization is a checked authorization request: what the consent
// page shows and the code is bound to.
type OAuthAuthorization struct {
	Client      memory.OAuthClient
	RedirectURI string // as sent (a loopback port may differ from the registered one)
	Resource    string
	Scope       []string
}

// CheckOAuthRequest checks an authorization request in the order the
// answer depends on. While the client or its redirect URI is not known to
// be genuine (redirect false), the error must be shown to the person and
// never sent to the redirect URI (RFC 6749 §4.1.2.1); after that, errors
// go back to the client as error=… on its redirect URI.
func (s *Service) CheckOAuthRequest(ctx context.Context, req OAuthRequest) (a OAuthAuthorization, redirect bool, err error) {
	o, err := s.oauth()
	if err != nil {
		return a, false, err
	}
	if a.Client, err = s.OAuthClient(ctx, req.ClientID); err != nil {
		return a, false, err
	}
	if req.RedirectURI == "" {
		return a, false, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "redirect_uri is missing")
	}
	if _, ok := memory.MatchRedirectURI(a.Client.RedirectURIs, req.RedirectURI); !ok {
		return a, false, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "redirect_uri is not one the client registered")
	}
	a.RedirectURI = req.RedirectURI
	if req.ResponseType != "code" {
		return a, true, memory.OAuthErrorf(memory.CodeInvalid, "unsupported_response_type", "response_type must be code")
	}
	if err := memory.ValidatePKCE(req.CodeChallengeMethod, req.CodeChallenge); err != nil {
		return a, true, err
	}
	if a.Resource, err = resourceOf(o, req.Resource); err != nil {
		return a, true, err
	}
	if a.Scope, err = oauthScope(req.Scope); err != nil {
		return a, true, err
	}
	return a, true, nil
}

// resourceOf is the canonical resource a request names (RFC 8707), or the
// first one when it names none.
func resourceOf(o *OAuthOptions, sent string) (string, error) {
	if sent == "" {
		return o.Resources[0], nil
	}
	var first error
	for _, r := range o.Resources {
		err := memory.ParseResource(sent, r)
		if err == nil {
			return r, nil
		}
		if first == nil {
			first = err
		}
	}
	return "", first
}

// oauthScope checks a requested scope: memory (the default when none is
// asked for, as claude.ai and ChatGPT omit it on reconnect) and
// offline_access, which changes nothing. Anything else is invalid_scope.
func oauthScope(sent string) ([]string, error) {
	scopes, err := memory.ParseScope(sent)
	if err != nil {
		return nil, err
	}
	for _, sc := range scopes {
		if sc != memory.OAuthScopeMemory && sc != memory.OAuthScopeOfflineAccess {
			return nil, memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidScope, "scope %q is not offered; ask for memory", sc)
		}
	}
	if !slices.Contains(scopes, memory.OAuthScopeMemory) {
		scopes = append([]string{memory.OAuthScopeMemory}, scopes...)
	}
	return scopes, nil
}

// AuthorizeOAuth records the consent of the person signed in as c to req
// and returns the authorization code for the client's redirect. The grant
// holds c's key ids; a server-admin key, which reads no memory, cannot be
// handed to a client.
func (s *Service) AuthorizeOAuth(ctx context.Context, c memory.Caller, req OAuthRequest) (string, error) {
	o, err := s.oauth()
	if err != nil {
		return "", err
	}
	a, _, err := s.CheckOAuthRequest(ctx, req)
	if err != nil {
		return "", err
	}
	if c.Empty() {
		return "", memory.Errorf(memory.CodeUnauthorized, "sign in with a key first")
	}
	var ids []int64
	for _, k := range c.Keys() {
		if k.ServerAdmin() {
			return "", memory.Errorf(memory.CodeForbidden, "a server-admin key cannot be given to a client: sign in with project keys")
		}
		ids = append(ids, k.ID)
	}
	s.pruneOAuth(ctx, o)
	now := s.opts.Now()
	grant, err := o.Store.CreateOAuthGrant(ctx, memory.OAuthGrant{ClientID: a.Client.ID, Resource: a.Resource,
		Scope: strings.Join(a.Scope, " "), KeyIDs: ids, CreatedAt: now, ExpiresAt: now.Add(memory.OAuthGrantTTL)})
	if err != nil {
		return "", err
	}
	code, err := newSecret(memory.OAuthCodePrefix)
	if err != nil {
		return "", err
	}
	if err := o.Store.PutOAuthCode(ctx, memory.OAuthCode{Hash: memory.HashToken(code), GrantID: grant,
		RedirectURI: a.RedirectURI, Challenge: req.CodeChallenge, ExpiresAt: now.Add(memory.OAuthCodeTTL)}); err != nil {
		return "", err
	}
	return code, nil
}

// newSecret is prefix and 43 characters of base64url of 32 random bytes,
// as a key's token.
func newSecret(prefix string) (string, error) {
	t, err := memory.NewToken()
	if err != nil {
		return "", memory.Internal(err)
	}
	return prefix + strings.TrimPrefix(t, memory.KeyPrefix), nil
}

// asInvalidGrant is a refusal of the store's codes and tokens as the
// token endpoint answers it: invalid_grant, in the store's words.
func asInvalidGrant(err error) error {
	if err == nil || memory.ErrorCode(err) != memory.CodeInvalid {
		return err
	}
	var name memory.OAuthError
	if errors.As(err, &name) {
		return err
	}
	return memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidGrant, "%s", memory.PublicText(err))
}
