package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"munin/internal/memory"
)

// OAuth storage (issue 25): clients, grants and their keys here; codes and
// tokens in oauth_tokens.go. Every check that decides whether a code or a
// token still works runs inside the transaction that uses it, on the
// control database's single writer, so two requests racing with the same
// code or refresh token are ordered: one wins, the other is a reuse.
//
// A grant is live while it is not revoked, not expired, and every key it
// names exists and is not revoked. A grant with one revoked key is dead as
// a whole: its tokens never act as a caller with fewer keys.

// PutOAuthClient stores a client. A cimd or static client whose id is
// known already is replaced (its CIMD document was fetched again, or the
// configuration changed); its creation time and grants stay. A dcr client
// whose id is taken, or any client whose id is taken by a client of
// another kind, is a conflict and changes nothing. A zero CreatedAt is now.
func (s *Store) PutOAuthClient(ctx context.Context, c memory.OAuthClient) error {
	if c.ID == "" {
		return memory.Errorf(memory.CodeInvalid, "oauth client id is empty")
	}
	switch c.Kind {
	case memory.OAuthClientDCR, memory.OAuthClientCIMD, memory.OAuthClientStatic:
	default:
		return memory.Errorf(memory.CodeInvalid, "oauth client kind %q must be dcr, cimd or static", c.Kind)
	}
	uris := c.RedirectURIs
	if uris == nil {
		uris = []string{}
	}
	js, err := json.Marshal(uris)
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	// One statement: the WHERE of the upsert leaves a dcr client, or one of
	// another kind, untouched, and then no row changes.
	res, err := s.control.writer.ExecContext(ctx, `INSERT INTO oauth_clients (id, kind, name, redirect_uris, secret_hash, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris, secret_hash = excluded.secret_hash
		WHERE oauth_clients.kind = excluded.kind AND excluded.kind <> 'dcr'`,
		c.ID, string(c.Kind), c.Name, string(js), nullString(c.SecretHash), c.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeConflict, "oauth client id is already registered")
	}
	return nil
}

// OAuthClient returns a client by id, or not_found.
func (s *Store) OAuthClient(ctx context.Context, id string) (memory.OAuthClient, error) {
	c := memory.OAuthClient{ID: id}
	var kind, uris string
	var secret sql.NullString
	var created int64
	err := s.control.reader.QueryRowContext(ctx, `SELECT kind, name, redirect_uris, secret_hash, created_at FROM oauth_clients WHERE id = ?`, id).
		Scan(&kind, &c.Name, &uris, &secret, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.OAuthClient{}, memory.Errorf(memory.CodeNotFound, "oauth client not found")
	}
	if err != nil {
		return memory.OAuthClient{}, fmt.Errorf("look up oauth client: %w", err)
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return memory.OAuthClient{}, fmt.Errorf("oauth client redirect_uris: %w", err)
	}
	c.Kind = memory.OAuthClientKind(kind)
	c.SecretHash = secret.String
	c.CreatedAt = fromNanos(created)
	return c, nil
}

// errKeyNotLive refuses a grant for a key that is unknown or revoked; the
// same words as KeyByToken, so nothing tells the two apart.
var errKeyNotLive = memory.Errorf(memory.CodeUnauthorized, "unknown or revoked key")

// CreateOAuthGrant stores a consent and returns its id, drawn at random as
// key ids are (memory.NewKeyID): grant ids may be shown to the people who
// sign in, and a sequence would count the server's sign-ins.
//
// The grant and its key ids are written in one transaction, and only if
// the client exists (else not_found) and every key exists and is not
// revoked (else unauthorized, "unknown or revoked key"); a refusal writes
// nothing. g.ClientName is not read: the grant copies the client's stored
// name. g.KeyIDs must be non-empty and without repeats (reads return them
// in this order: the first key's project is the default), g.ExpiresAt set;
// a zero CreatedAt is now. The client's last_used_at becomes the grant's
// creation time.
func (s *Store) CreateOAuthGrant(ctx context.Context, g memory.OAuthGrant) (int64, error) {
	return s.createOAuthGrant(ctx, g, memory.NewKeyID)
}

// createOAuthGrant is CreateOAuthGrant with the id drawn by draw (tests
// make it collide).
func (s *Store) createOAuthGrant(ctx context.Context, g memory.OAuthGrant, draw func() (int64, error)) (int64, error) {
	if g.ClientID == "" {
		return 0, memory.Errorf(memory.CodeInvalid, "oauth grant has no client")
	}
	if len(g.KeyIDs) == 0 {
		return 0, memory.Errorf(memory.CodeInvalid, "oauth grant has no keys")
	}
	if len(g.KeyIDs) > memory.MaxCallerKeys {
		return 0, memory.Errorf(memory.CodeInvalid, "oauth grant has %d keys, at most %d", len(g.KeyIDs), memory.MaxCallerKeys)
	}
	seen := make(map[int64]bool, len(g.KeyIDs))
	for _, id := range g.KeyIDs {
		if seen[id] {
			return 0, memory.Errorf(memory.CodeInvalid, "oauth grant names key %d twice", id)
		}
		seen[id] = true
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = time.Now()
	}
	if !g.ExpiresAt.After(g.CreatedAt) {
		return 0, memory.Errorf(memory.CodeInvalid, "oauth grant expires before it is created")
	}

	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("create oauth grant: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var name string
	err = tx.QueryRowContext(ctx, `SELECT name FROM oauth_clients WHERE id = ?`, g.ClientID).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, memory.Errorf(memory.CodeNotFound, "oauth client not found")
	}
	if err != nil {
		return 0, fmt.Errorf("create oauth grant: %w", err)
	}
	for _, id := range g.KeyIDs {
		var revoked sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM keys WHERE id = ?`, id).Scan(&revoked)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked.Valid) {
			return 0, errKeyNotLive
		}
		if err != nil {
			return 0, fmt.Errorf("create oauth grant: %w", err)
		}
	}
	created := g.CreatedAt.UnixNano()
	var id int64
	for try := 1; ; try++ {
		if id, err = draw(); err != nil {
			return 0, err
		}
		// A clash fails this statement only; the transaction goes on.
		_, err = tx.ExecContext(ctx, `INSERT INTO oauth_grants (id, client_id, client_name, resource, scope, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, id, g.ClientID, name, g.Resource, g.Scope, created, g.ExpiresAt.UnixNano())
		if err == nil {
			break
		}
		if !idTaken(err) || try == memory.KeyIDTries {
			return 0, fmt.Errorf("create oauth grant: %w", err)
		}
	}
	for pos, k := range g.KeyIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO oauth_grant_keys (grant_id, key_id, position) VALUES (?, ?, ?)`, id, k, pos); err != nil {
			return 0, fmt.Errorf("create oauth grant: key %d: %w", k, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE oauth_clients SET last_used_at = ? WHERE id = ?`, created, g.ClientID); err != nil {
		return 0, fmt.Errorf("create oauth grant: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("create oauth grant: commit: %w", err)
	}
	return id, nil
}

// RevokeOAuthGrant revokes a grant by id: every code and token of it stops
// working at once. Revoking a revoked grant again is a no-op; an unknown
// id is not_found.
func (s *Store) RevokeOAuthGrant(ctx context.Context, id int64) error {
	res, err := s.control.writer.ExecContext(ctx, `UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, time.Now().UnixNano(), id)
	if err != nil {
		return fmt.Errorf("revoke oauth grant %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("revoke oauth grant %d: %w", id, err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeNotFound, "oauth grant %d not found", id)
	}
	return nil
}

// revokeGrantsOfKey revokes, inside tx, every grant that holds key id
// (keys.go's revokeKey calls it in the key's own transaction).
func revokeGrantsOfKey(ctx context.Context, tx *sql.Tx, id, at int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE oauth_grants SET revoked_at = ? WHERE revoked_at IS NULL
		AND id IN (SELECT grant_id FROM oauth_grant_keys WHERE key_id = ?)`, at, id)
	return err
}

// revokeGrantTx revokes grant id inside tx (a reused code or refresh token).
func revokeGrantTx(ctx context.Context, tx *sql.Tx, id int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, now.UnixNano(), id)
	return err
}

// grantSelect reads one grant with its key ids and whether each key is
// live; the caller adds the WHERE on g.id. The aggregate returns exactly one
// row, whose id is NULL when no grant matched.
const grantSelect = `SELECT g.id, g.client_id, g.client_name, g.resource, g.scope, g.created_at, g.expires_at, g.revoked_at,
	group_concat(gk.position || ':' || gk.key_id), count(gk.key_id), count(k.id), count(k.revoked_at)
	FROM oauth_grants g
	LEFT JOIN oauth_grant_keys gk ON gk.grant_id = g.id
	LEFT JOIN keys k ON k.id = gk.key_id
	WHERE `

// grantRow is a grant as grantSelect reads it.
type grantRow struct {
	memory.OAuthGrant
	found    bool
	keysLive bool // every key exists and is not revoked, and there is one
}

// live tells whether the grant works at now.
func (r grantRow) live(now time.Time) bool {
	return r.found && !r.Revoked && r.ExpiresAt.After(now) && r.keysLive
}

// scanGrant reads grantSelect's row.
func scanGrant(sc interface{ Scan(...any) error }) (grantRow, error) {
	var r grantRow
	var id, created, expires, revoked sql.NullInt64
	var client, name, resource, scope, keyIDs sql.NullString
	var nKeys, nFound, nRevoked int
	if err := sc.Scan(&id, &client, &name, &resource, &scope, &created, &expires, &revoked, &keyIDs, &nKeys, &nFound, &nRevoked); err != nil {
		return r, err
	}
	if !id.Valid {
		return r, nil
	}
	r.found = true
	r.ID = id.Int64
	r.ClientID, r.ClientName, r.Resource, r.Scope = client.String, name.String, resource.String, scope.String
	r.CreatedAt, r.ExpiresAt = fromNanos(created.Int64), fromNanos(expires.Int64)
	r.Revoked = revoked.Valid
	r.keysLive = nKeys > 0 && nFound == nKeys && nRevoked == 0
	// "position:key_id" pairs: group_concat keeps no order, the caller's
	// key order matters (its first key's project is the default).
	type placed struct{ pos, id int64 }
	var keys []placed
	for _, f := range strings.Split(keyIDs.String, ",") {
		if f == "" {
			continue
		}
		p, k, _ := strings.Cut(f, ":")
		pos, perr := strconv.ParseInt(p, 10, 64)
		id, kerr := strconv.ParseInt(k, 10, 64)
		if perr != nil || kerr != nil {
			return r, fmt.Errorf("oauth grant %d key ids: %q", r.ID, f)
		}
		keys = append(keys, placed{pos, id})
	}
	slices.SortFunc(keys, func(a, b placed) int { return cmp.Compare(a.pos, b.pos) })
	for _, k := range keys {
		r.KeyIDs = append(r.KeyIDs, k.id)
	}
	return r, nil
}

// loadGrant reads grant id through q (a transaction or a pool).
func loadGrant(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) (grantRow, error) {
	return scanGrant(q.QueryRowContext(ctx, grantSelect+`g.id = +?`, id))
}

// CountNewOAuthClients counts the clients registered (DCR) or fetched
// (CIMD) since then that nobody has signed in with yet: what an
// anonymous flood of registrations would grow.
func (s *Store) CountNewOAuthClients(ctx context.Context, since time.Time) (int, error) {
	var n int
	err := s.control.reader.QueryRowContext(ctx, `SELECT count(*) FROM oauth_clients
		WHERE kind IN ('dcr', 'cimd') AND last_used_at IS NULL AND created_at >= +?`, since.UnixNano()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count new oauth clients: %w", err)
	}
	return n, nil
}

// OAuth rows are kept a while past their end: a used code for reuse
// detection after it expired, a grant ended for the people who look at
// their sign-ins. oauthPruneChunk bounds each DELETE, so a prune holds the
// control writer for a moment only.
const (
	oauthCodeKeep = time.Hour
	// oauthUnusedClientKeep: a registered (or fetched) client nobody
	// signed in with is kept a day, time enough to finish a sign-in.
	oauthUnusedClientKeep = 24 * time.Hour
	oauthGrantKeep        = 30 * 24 * time.Hour
	oauthPruneChunk       = 500
	// A grant's deletion takes its codes and tokens with it (ON DELETE
	// CASCADE): a grant refreshed hourly for 90 days has a few thousand.
	oauthPruneGrants = 20
)

// PruneOAuth deletes what can no longer be used: codes expired more than
// an hour ago, expired tokens, grants that expired or were revoked more
// than 30 days ago together with their codes, tokens and key ids, and
// registered or fetched clients that nobody signed in with for a day. Each of
// its three DELETEs takes at most a bounded chunk; it returns the codes,
// tokens and grants it deleted (rows deleted with a grant not counted), so
// a caller repeats while the answer is positive.
func (s *Store) PruneOAuth(ctx context.Context, now time.Time) (int64, error) {
	steps := []struct {
		what, del string
		args      []any
	}{
		{"codes", `DELETE FROM oauth_codes WHERE hash IN (SELECT hash FROM oauth_codes WHERE expires_at <= +? LIMIT +?)`,
			[]any{now.Add(-oauthCodeKeep).UnixNano(), oauthPruneChunk}},
		{"tokens", `DELETE FROM oauth_tokens WHERE hash IN (SELECT hash FROM oauth_tokens WHERE expires_at <= +? LIMIT +?)`,
			[]any{now.UnixNano(), oauthPruneChunk}},
		{"grants", `DELETE FROM oauth_grants WHERE id IN (SELECT id FROM oauth_grants WHERE expires_at <= +?1
			UNION SELECT id FROM oauth_grants WHERE revoked_at <= +?1 LIMIT +?2)`,
			[]any{now.Add(-oauthGrantKeep).UnixNano(), oauthPruneGrants}},
		// Registered or fetched clients nobody signed in with for a day:
		// anyone can register, so such rows must not pile up.
		{"clients", `DELETE FROM oauth_clients WHERE id IN (SELECT c.id FROM oauth_clients c
			WHERE c.kind IN ('dcr', 'cimd') AND c.last_used_at IS NULL AND c.created_at <= +?
			AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id) LIMIT +?)`,
			[]any{now.Add(-oauthUnusedClientKeep).UnixNano(), oauthPruneChunk}},
	}
	var total int64
	for _, st := range steps {
		res, err := s.control.writer.ExecContext(ctx, st.del, st.args...)
		if err != nil {
			return total, fmt.Errorf("prune oauth %s: %w", st.what, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("prune oauth %s: %w", st.what, err)
		}
		total += n
	}
	return total, nil
}

// nullString stores "" as NULL.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// foreignKeyFailed reports an insert naming a row that does not exist.
func foreignKeyFailed(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintForeignKey
}
