package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"munin/internal/memory"
)

// idTaken reports whether err is the insert's clash with an existing id.
func idTaken(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
}

// CreateKey makes a new key for an agent in an existing project. It returns
// the token, which is shown once: only its SHA-256 is stored.
func (s *Store) CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return "", memory.Key{}, err
	}
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := memory.ParseRole(string(role)); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := s.Project(ctx, ref); err != nil {
		return "", memory.Key{}, err
	}
	return s.insertKey(ctx, memory.Key{Project: ref, Agent: agent, Role: role})
}

// CreateServerAdminKey makes a server-admin key, which belongs to no
// project. It returns the token, shown once.
func (s *Store) CreateServerAdminKey(ctx context.Context, agent string) (string, memory.Key, error) {
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	return s.insertKey(ctx, memory.Key{Agent: agent, Role: memory.RoleServerAdmin})
}

// insertKey stores k (its fields already checked) under a new token; a
// zero project is stored as NULL.
func (s *Store) insertKey(ctx context.Context, k memory.Key) (string, memory.Key, error) {
	token, err := memory.NewToken()
	if err != nil {
		return "", memory.Key{}, err
	}
	var ws, proj sql.NullString
	if k.Project != (memory.ProjectRef{}) {
		ws = sql.NullString{String: k.Project.Workspace, Valid: true}
		proj = sql.NullString{String: k.Project.Project, Valid: true}
	}
	now := time.Now().UTC()
	for try := 1; ; try++ {
		id, err := memory.NewKeyID()
		if err != nil {
			return "", memory.Key{}, err
		}
		if s.hookKeyID != nil {
			id = s.hookKeyID(id)
		}
		// One statement per draw: a clash inserts nothing, and a new id is drawn.
		_, err = s.control.writer.ExecContext(ctx, `INSERT INTO keys (id, workspace, project, agent, role, hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, ws, proj, k.Agent, string(k.Role), memory.HashToken(token), now.UnixNano())
		if err == nil {
			k.ID = id
			break
		}
		if !idTaken(err) || try == memory.KeyIDTries {
			return "", memory.Key{}, fmt.Errorf("create key for %s in %s: %w", k.Agent, k.ProjectLabel(), err)
		}
	}
	k.CreatedAt = fromNanos(now.UnixNano())
	return token, k, nil
}

// keyCols are the columns scanKey reads, in order.
const keyCols = `id, workspace, project, agent, role, created_at, last_used_at, revoked_at`

// scanKey reads keyCols.
func scanKey(sc interface{ Scan(...any) error }) (memory.Key, error) {
	var k memory.Key
	var ws, proj sql.NullString // NULL for a server-admin key
	var role string
	var created int64
	var used, revoked sql.NullInt64
	if err := sc.Scan(&k.ID, &ws, &proj, &k.Agent, &role, &created, &used, &revoked); err != nil {
		return k, err
	}
	k.Project = memory.ProjectRef{Workspace: ws.String, Project: proj.String}
	k.Role = memory.Role(role)
	k.CreatedAt = fromNanos(created)
	if used.Valid {
		t := fromNanos(used.Int64)
		k.LastUsedAt = &t
	}
	k.Revoked = revoked.Valid
	return k, nil
}

// KeyByToken finds the live key of a token. Unknown and revoked keys get the
// same answer, so a caller learns nothing about which keys exist.
func (s *Store) KeyByToken(ctx context.Context, token string) (memory.Key, error) {
	unauthorized := memory.Errorf(memory.CodeUnauthorized, "unknown or revoked key")
	if token == "" {
		return memory.Key{}, unauthorized
	}
	hash := memory.HashToken(token)
	k, cached, gen, cacheErr := s.keyCache.get(ctx, hash)
	if cacheErr != nil {
		s.log.Warn("key cache unusable; reading the key from the database", "err", cacheErr)
	}
	if !cached {
		var err error
		k, err = scanKey(s.control.reader.QueryRowContext(ctx, `SELECT `+keyCols+` FROM keys WHERE hash = ?`, hash))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.Key{}, unauthorized
		}
		if err != nil {
			return memory.Key{}, fmt.Errorf("look up key: %w", err)
		}
		if k.Revoked {
			return memory.Key{}, unauthorized
		}
		if cacheErr == nil {
			s.keyCache.put(hash, k, gen)
		}
	}
	now := time.Now().UTC()
	if s.keyUse.Due(k.ID, now) {
		// A failure here must not fail the request: last_used_at is a hint.
		if _, err := s.control.writer.ExecContext(ctx, `UPDATE keys SET last_used_at = ? WHERE id = ?`, now.UnixNano(), k.ID); err != nil {
			s.log.Warn("update key last_used_at", "key_id", k.ID, "err", err)
		} else {
			t := fromNanos(now.UnixNano())
			k.LastUsedAt = &t
		}
	}
	return k, nil
}

// ListKeys returns all keys, revoked ones included, oldest first (ids are
// random, so they say nothing of the order).
func (s *Store) ListKeys(ctx context.Context) ([]memory.Key, error) {
	return s.listKeys(ctx, `SELECT `+keyCols+` FROM keys ORDER BY created_at, id`)
}

// ListProjectKeys returns the keys of one project, revoked ones included,
// oldest first.
func (s *Store) ListProjectKeys(ctx context.Context, ref memory.ProjectRef) ([]memory.Key, error) {
	// +?: see stmtCacheSize.
	return s.listKeys(ctx, `SELECT `+keyCols+` FROM keys WHERE workspace = +? AND project = +? ORDER BY created_at, id`, ref.Workspace, ref.Project)
}

// KeyCounts counts a project's keys for the key limits: those created at or
// after since (revoked ones included) with the oldest of them, and the live
// ones.
func (s *Store) KeyCounts(ctx context.Context, ref memory.ProjectRef, since time.Time) (memory.KeyCounts, error) {
	var c memory.KeyCounts
	var oldest sql.NullInt64
	err := s.control.reader.QueryRowContext(ctx, `SELECT
		coalesce(sum(created_at >= ?1), 0),
		min(CASE WHEN created_at >= ?1 THEN created_at END),
		coalesce(sum(revoked_at IS NULL), 0)
		FROM keys WHERE workspace = ?2 AND project = ?3`, since.UnixNano(), ref.Workspace, ref.Project).
		Scan(&c.CreatedSince, &oldest, &c.Live)
	if err != nil {
		return memory.KeyCounts{}, fmt.Errorf("count keys of %s: %w", ref, err)
	}
	if oldest.Valid {
		c.OldestSince = fromNanos(oldest.Int64)
	}
	return c, nil
}

func (s *Store) listKeys(ctx context.Context, query string, args ...any) ([]memory.Key, error) {
	rows, err := s.control.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	out := []memory.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// RevokeKey revokes a key by id; revoking a revoked key again is a no-op,
// an unknown id is not_found.
func (s *Store) RevokeKey(ctx context.Context, id int64) error {
	return s.revokeKey(ctx, id, `UPDATE keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, id)
}

// RevokeProjectKey revokes key id only if it belongs to project ref; a key
// of any other project (or of none) is not_found, exactly as an unknown id,
// so a project admin learns nothing about other projects' keys.
func (s *Store) RevokeProjectKey(ctx context.Context, ref memory.ProjectRef, id int64) error {
	return s.revokeKey(ctx, id, `UPDATE keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND workspace = ? AND project = ?`,
		id, ref.Workspace, ref.Project)
}

// revokeKey runs one revoking UPDATE (its first parameter is the time) and,
// in the same transaction, revokes every OAuth grant holding the key, so
// that its tokens and refresh tokens end with it (revokeGrantsOfKey).
func (s *Store) revokeKey(ctx context.Context, id int64, update string, args ...any) error {
	// After the transaction, whatever its outcome: a lookup racing it must
	// not keep the key.
	defer s.keyCache.empty()
	now := time.Now().UnixNano()
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("revoke key %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, update, append([]any{now}, args...)...)
	if err != nil {
		return fmt.Errorf("revoke key %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("revoke key %d: %w", id, err)
	}
	if n == 0 {
		return memory.Errorf(memory.CodeNotFound, "key %d not found", id)
	}
	if err := revokeGrantsOfKey(ctx, tx, id, now); err != nil {
		return fmt.Errorf("revoke key %d: oauth grants: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("revoke key %d: commit: %w", id, err)
	}
	return nil
}
