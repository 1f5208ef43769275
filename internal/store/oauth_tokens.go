package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"munin/internal/memory"
)

// The refusals of codes and tokens. The service maps each to OAuth's
// answer (invalid_grant at /token, 401 with the challenge on a resource)
// and tells them apart with errors.Is, for its log and metrics. Their
// words never say whether a code or token existed: a reused code reads
// like an unknown one.
var (
	// ErrOAuthCodeInvalid (invalid): the code is unknown, expired, or its
	// grant is revoked, expired or holds a revoked key.
	ErrOAuthCodeInvalid = memory.Errorf(memory.CodeInvalid, "authorization code is invalid, expired or already used")
	// ErrOAuthCodeReused (invalid, the same words): the code was exchanged
	// before; its grant is now revoked with every token of it (OAuth 2.1
	// §4.1.3).
	ErrOAuthCodeReused = memory.Errorf(memory.CodeInvalid, "authorization code is invalid, expired or already used")
	// ErrOAuthRefreshInvalid (invalid): the refresh token is unknown, not a
	// refresh token, expired, or its grant is revoked, expired or holds a
	// revoked key.
	ErrOAuthRefreshInvalid = memory.Errorf(memory.CodeInvalid, "refresh token is invalid, expired or revoked")
	// ErrOAuthRefreshReused (invalid, the same words): the refresh token was
	// rotated before; its grant is now revoked with every token of it.
	ErrOAuthRefreshReused = memory.Errorf(memory.CodeInvalid, "refresh token is invalid, expired or revoked")
	// ErrOAuthTokenInvalid (unauthorized): the access token is unknown,
	// expired, or its grant is revoked, expired or holds a revoked key.
	ErrOAuthTokenInvalid = memory.Errorf(memory.CodeUnauthorized, "unknown, expired or revoked token")
)

// PutOAuthCode stores an authorization code of a grant. A grant that does
// not exist or is revoked is not_found and nothing is stored; a hash
// already stored is a conflict.
func (s *Store) PutOAuthCode(ctx context.Context, c memory.OAuthCode) error {
	if c.Hash == "" || c.RedirectURI == "" || c.Challenge == "" || c.ExpiresAt.IsZero() {
		return memory.Errorf(memory.CodeInvalid, "authorization code needs a hash, redirect URI, challenge and expiry")
	}
	res, err := s.control.writer.ExecContext(ctx, `INSERT INTO oauth_codes (hash, grant_id, redirect_uri, challenge, expires_at)
		SELECT ?, id, ?, ?, ? FROM oauth_grants WHERE id = ? AND revoked_at IS NULL`,
		c.Hash, c.RedirectURI, c.Challenge, c.ExpiresAt.UnixNano(), c.GrantID)
	if idTaken(err) {
		return memory.Errorf(memory.CodeConflict, "authorization code already stored")
	}
	if err != nil {
		return fmt.Errorf("put oauth code: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("put oauth code: %w", err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeNotFound, "oauth grant %d not found or revoked", c.GrantID)
	}
	return nil
}

// ConsumeOAuthCode exchanges a code once, in one write transaction: it
// returns the code (its redirect URI and PKCE challenge, for the service
// to check) and its live grant with KeyIDs and ClientName, and marks the
// code used. The code is used up even if the service's checks then fail.
//
// Refusals, all code invalid: ErrOAuthCodeInvalid for an unknown or
// expired code or a grant that is not live (revoked, expired, a key
// revoked); ErrOAuthCodeReused for a code used before — the grant is then
// revoked, so every token issued from the code ends.
func (s *Store) ConsumeOAuthCode(ctx context.Context, hash string, now time.Time) (memory.OAuthCode, memory.OAuthGrant, error) {
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	c := memory.OAuthCode{Hash: hash}
	var expires int64
	var used sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT grant_id, redirect_uri, challenge, expires_at, used_at FROM oauth_codes WHERE hash = ?`, hash).
		Scan(&c.GrantID, &c.RedirectURI, &c.Challenge, &expires, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.OAuthCode{}, memory.OAuthGrant{}, ErrOAuthCodeInvalid
	}
	if err != nil {
		return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: %w", err)
	}
	c.ExpiresAt = fromNanos(expires)
	if used.Valid {
		// Reuse, expired or not: whoever holds the code twice may be an
		// attacker, and the tokens of the first exchange end with the grant.
		if err := revokeGrantTx(ctx, tx, c.GrantID, now); err != nil {
			return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: revoke on reuse: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: revoke on reuse: %w", err)
		}
		return memory.OAuthCode{}, memory.OAuthGrant{}, ErrOAuthCodeReused
	}
	if !c.ExpiresAt.After(now) {
		return memory.OAuthCode{}, memory.OAuthGrant{}, ErrOAuthCodeInvalid
	}
	g, err := loadGrant(ctx, tx, c.GrantID)
	if err != nil {
		return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: %w", err)
	}
	if !g.live(now) {
		return memory.OAuthCode{}, memory.OAuthGrant{}, ErrOAuthCodeInvalid
	}
	if _, err := tx.ExecContext(ctx, `UPDATE oauth_codes SET used_at = ? WHERE hash = ?`, now.UnixNano(), hash); err != nil {
		return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return memory.OAuthCode{}, memory.OAuthGrant{}, fmt.Errorf("consume oauth code: commit: %w", err)
	}
	return c, g.OAuthGrant, nil
}

// checkOAuthToken refuses a token record the tables would not take.
func checkOAuthToken(t memory.OAuthToken) error {
	if t.Hash == "" || t.ExpiresAt.IsZero() {
		return memory.Errorf(memory.CodeInvalid, "oauth token needs a hash and an expiry")
	}
	if t.Kind != memory.OAuthAccess && t.Kind != memory.OAuthRefresh {
		return memory.Errorf(memory.CodeInvalid, "oauth token kind %q must be access or refresh", t.Kind)
	}
	return nil
}

// insertOAuthToken stores t inside tx.
func insertOAuthToken(ctx context.Context, tx *sql.Tx, t memory.OAuthToken) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO oauth_tokens (hash, grant_id, kind, expires_at) VALUES (?, ?, ?, ?)`,
		t.Hash, t.GrantID, string(t.Kind), t.ExpiresAt.UnixNano())
	switch {
	case idTaken(err):
		return memory.Errorf(memory.CodeConflict, "oauth token already stored")
	case foreignKeyFailed(err):
		return memory.Errorf(memory.CodeNotFound, "oauth grant %d not found", t.GrantID)
	}
	return err
}

// PutOAuthTokens stores tokens, all or none, in one transaction (the pair
// a code exchange issues). A grant that does not exist is not_found, a
// hash already stored a conflict. Nothing to store is no error.
func (s *Store) PutOAuthTokens(ctx context.Context, tokens ...memory.OAuthToken) error {
	for _, t := range tokens {
		if err := checkOAuthToken(t); err != nil {
			return err
		}
	}
	if len(tokens) == 0 {
		return nil
	}
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put oauth tokens: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, t := range tokens {
		if err := insertOAuthToken(ctx, tx, t); err != nil {
			return fmt.Errorf("put oauth tokens: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put oauth tokens: commit: %w", err)
	}
	return nil
}

// OAuthAccess returns the live grant of an access token, with KeyIDs and
// ClientName: the token is an access token and not expired, its grant is
// not revoked or expired, and every key of the grant exists and is not
// revoked — one revoked key ends the grant, never a caller with fewer
// keys. Anything else is ErrOAuthTokenInvalid (unauthorized). The service
// still compares the grant's Resource with the resource asked for.
//
// It is one read on the control database's read pool per call, uncached
// (BenchmarkOAuthAccess): a revocation through any process is seen by the
// next call.
func (s *Store) OAuthAccess(ctx context.Context, hash string, now time.Time) (memory.OAuthGrant, error) {
	g, err := scanGrant(s.control.reader.QueryRowContext(ctx, grantSelect+`g.id =
		(SELECT grant_id FROM oauth_tokens WHERE hash = +? AND kind = 'access' AND expires_at > +?)`, hash, now.UnixNano()))
	if err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("look up oauth token: %w", err)
	}
	if !g.live(now) {
		return memory.OAuthGrant{}, ErrOAuthTokenInvalid
	}
	return g.OAuthGrant, nil
}

// RotateOAuthRefresh exchanges a refresh token for a new access and
// refresh token of the same grant, in one write transaction: the old token
// is marked used and the pair stored (their GrantID is set to the old
// token's grant; what the caller put there is ignored). It returns the
// grant, with KeyIDs and ClientName.
//
// Refusals: a malformed new pair is invalid (checkOAuthToken), before
// anything is read; ErrOAuthRefreshInvalid (invalid) for an unknown,
// expired or non-refresh old token, or a grant that is not live;
// ErrOAuthRefreshReused (invalid) for a refresh token used before — the
// grant is then revoked, so every token of its family ends; a new hash
// already stored is a conflict. Every refusal but reuse changes nothing.
func (s *Store) RotateOAuthRefresh(ctx context.Context, oldHash string, access, refresh memory.OAuthToken, now time.Time) (memory.OAuthGrant, error) {
	if access.Kind != memory.OAuthAccess || refresh.Kind != memory.OAuthRefresh {
		return memory.OAuthGrant{}, memory.Errorf(memory.CodeInvalid, "rotation needs an access and a refresh token")
	}
	for _, t := range []memory.OAuthToken{access, refresh} {
		if err := checkOAuthToken(t); err != nil {
			return memory.OAuthGrant{}, err
		}
	}
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var grantID, expires int64
	var kind string
	var used sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT grant_id, kind, expires_at, used_at FROM oauth_tokens WHERE hash = ?`, oldHash).
		Scan(&grantID, &kind, &expires, &used)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && kind != string(memory.OAuthRefresh)) {
		return memory.OAuthGrant{}, ErrOAuthRefreshInvalid
	}
	if err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	if used.Valid {
		if err := revokeGrantTx(ctx, tx, grantID, now); err != nil {
			return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: revoke on reuse: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: revoke on reuse: %w", err)
		}
		return memory.OAuthGrant{}, ErrOAuthRefreshReused
	}
	if expires <= now.UnixNano() {
		return memory.OAuthGrant{}, ErrOAuthRefreshInvalid
	}
	g, err := loadGrant(ctx, tx, grantID)
	if err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	if !g.live(now) {
		return memory.OAuthGrant{}, ErrOAuthRefreshInvalid
	}
	if _, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET used_at = ? WHERE hash = ?`, now.UnixNano(), oldHash); err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	for _, t := range []memory.OAuthToken{access, refresh} {
		t.GrantID = grantID
		if err := insertOAuthToken(ctx, tx, t); err != nil {
			return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return memory.OAuthGrant{}, fmt.Errorf("rotate refresh token: commit: %w", err)
	}
	return g.OAuthGrant, nil
}
