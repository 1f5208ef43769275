package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"munin/internal/memory"
)

// proposalIdemPrefix marks a proposal's idempotency record. A proposal's
// record lives in the idempotency table beside those of versions, under the
// caller's key with this prefix and the negated proposal id as its version:
// the writer's replay lookup of a direct write (the caller's key as sent)
// never finds it, and a retry of the proposal finds it before anything is
// proposed again.
const proposalIdemPrefix = "proposal\x00"

// applyProposal turns w into a proposal when the project reviews it
// (proposed set): always for memory.ProposeAlways, and for
// memory.ProposeIfReviewed when the project's review setting is
// memory.ReviewAgents (review, from the writer's cache of the project's
// settings, which a SetReview earlier in the batch has already changed).
// It runs inside the writer's batch transaction, so the checks and the
// insert see one state of the file.
func applyProposal(tx *sql.Tx, project string, w memory.Write, tags string, now time.Time, review string) (memory.WriteResult, bool, error) {
	if w.Review == memory.ProposeIfReviewed && review != memory.ReviewAgents {
		return memory.WriteResult{}, false, nil
	}
	if w.IdempotencyKey != "" {
		res, found, err := proposalReplay(context.Background(), tx, project, w.Slug, w.IdempotencyKey, now)
		if err != nil || found {
			return res, true, err
		}
	}
	// The checks of a direct write (applyWrite), against the latest version
	// now; the approval checks again against the latest version then.
	var cur int
	var deleted bool
	err := tx.QueryRow(`SELECT latest_version, deleted FROM entries WHERE project = ? AND slug = ?`,
		project, w.Slug).Scan(&cur, &deleted)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return memory.WriteResult{}, true, fmt.Errorf("read latest version: %w", err)
	}
	if w.ExpectedVersion != nil && *w.ExpectedVersion != cur {
		return memory.WriteResult{}, true, memory.Errorf(memory.CodeConflict, "%s is at version %d, expected %d", w.Slug, cur, *w.ExpectedVersion)
	}
	if w.Deleted {
		if cur == 0 {
			return memory.WriteResult{}, true, memory.Errorf(memory.CodeNotFound, "entry %q not found", w.Slug)
		}
		if deleted {
			return memory.WriteResult{}, true, memory.Errorf(memory.CodeNotFound, "entry %q is already forgotten (version %d)", w.Slug, cur)
		}
	}
	var pending int
	if err := tx.QueryRow(`SELECT count(*) FROM proposals WHERE project = ? AND state = 'pending'`, project).Scan(&pending); err != nil {
		return memory.WriteResult{}, true, fmt.Errorf("count pending proposals: %w", err)
	}
	if pending >= memory.MaxPendingProposals {
		return memory.WriteResult{}, true, memory.Errorf(memory.CodeBudgetExhausted,
			"project %s has %d proposals waiting for review, the most it holds; an admin of the project must approve or reject some first", project, pending)
	}

	supersedes, err := propJSON(w.Supersedes)
	if err != nil {
		return memory.WriteResult{}, true, err
	}
	similar, err := propJSON(w.Similar)
	if err != nil {
		return memory.WriteResult{}, true, err
	}
	at := now.UnixNano()
	res, err := tx.Exec(`INSERT INTO proposals (project, slug, agent, base_version, title, content, tags, deleted,
			valid_until, supersedes, similar, state, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
		project, w.Slug, w.Agent, cur, w.Title, w.Content, tags, w.Deleted,
		propNanos(w.ValidUntil), supersedes, similar, at)
	if err != nil {
		return memory.WriteResult{}, true, fmt.Errorf("insert proposal: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return memory.WriteResult{}, true, fmt.Errorf("insert proposal: %w", err)
	}
	if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at, proposal, client) VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
		project, w.Agent, actionPropose, w.Slug, at, id, nullString(w.Client)); err != nil {
		return memory.WriteResult{}, true, fmt.Errorf("insert audit row: %w", err)
	}
	if w.IdempotencyKey != "" {
		if _, err := tx.Exec(`INSERT OR REPLACE INTO idempotency (project, slug, key, version, created_at) VALUES (?, ?, ?, ?, ?)`,
			project, w.Slug, proposalIdemPrefix+w.IdempotencyKey, -id, at); err != nil {
			return memory.WriteResult{}, true, fmt.Errorf("insert idempotency key: %w", err)
		}
	}
	return memory.WriteResult{Slug: w.Slug, Proposal: id, BaseVersion: cur, CreatedAt: fromNanos(at)}, true, nil
}

// proposalReplay answers a retry of a proposal made with the same
// idempotency key within its 24 hours: the first proposal, Replayed set.
// Like findReplay it reads in the writer's transaction or from the read
// pool (Replay, for a retry that arrives when the budget is used up).
func proposalReplay(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, project, slug, key string, now time.Time) (memory.WriteResult, bool, error) {
	var id, base int64
	var at int64
	err := q.QueryRowContext(ctx, `SELECT p.id, p.base_version, p.created_at FROM idempotency i JOIN proposals p ON p.id = -i.version
		WHERE i.project = +? AND i.slug = +? AND i.key = +? AND i.created_at >= +? AND i.version < 0`,
		project, slug, proposalIdemPrefix+key, now.Add(-idempotencyTTL).UnixNano()).Scan(&id, &base, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.WriteResult{}, false, nil
	}
	if err != nil {
		return memory.WriteResult{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	return memory.WriteResult{Slug: slug, Proposal: id, BaseVersion: int(base), CreatedAt: fromNanos(at), Replayed: true}, true, nil
}

// propJSON stores a list as a JSON array ([] for none).
func propJSON[T any](list []T) (string, error) {
	if list == nil {
		return "[]", nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("encode list: %w", err)
	}
	return string(b), nil
}

// propNanos stores an optional time as unix nanoseconds or NULL.
func propNanos(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// propTime reads what propNanos stored.
func propTime(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}
