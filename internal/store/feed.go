package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"

	"munin/internal/memory"
)

// The change feed (docs/changes.md) is the audit log read after a
// position. Its ids are given out by the workspace's single writer, so they
// grow in commit order and a read snapshot holds every row up to its last
// id — invariant 1 (docs/architecture.md#invariant-1-one-writer-per-workspace).
// Rows are never deleted, so a position stays readable for ever; only a
// file replaced by another (an older copy, a file created anew) invalidates
// it, which the identity and the row's time tell (workspace migration 0007).
//
// The feed ends at the workspace's last acknowledged audit id
// (workspace.confirmed), not at the file's last row: in a cluster a batch
// is in the owner's file before the replica confirmed it, and a reader
// that saw it there would hold a cursor past the end of a successor that
// restored the replica without it — invariant 5
// (docs/architecture.md#invariant-5-acknowledged-writes-survive-a-crash).
// On a single server the two are the same as soon as a batch committed.

// errExpired is the answer to a position of another file.
func errExpired(ws, why string) error {
	return memory.Errorf(memory.CodeInvalid,
		"expired or foreign cursor: workspace %s %s since the cursor was made; start again with since=now (or an empty since for everything)", ws, why)
}

// feedRowsSQL selects a project's audit rows after an id, up to the
// snapshot's end, from a floor time on, in id order: a range scan of index
// audit_log_project_id. +at keeps the planner off the index on (project,
// at). +?: see stmtCacheSize.
const feedRowsSQL = `SELECT id, agent, action, slug, version, at, coalesce(proposal, 0), coalesce(client, '') FROM audit_log
	WHERE project = +? AND id > +? AND id <= +? AND +at >= +?`

// feedEndSQL selects the last audit row up to the acknowledged end: a
// search of the rowid, however many unacknowledged rows follow.
const feedEndSQL = `SELECT id, at FROM audit_log WHERE id <= +? ORDER BY id DESC LIMIT 1`

// feedPrivateSQL leaves out what a key that does not review must not see:
// rows about a proposal (propose, reject, an imported proposal or
// decision) unless the proposal is the viewer's own. An approval is a new
// version everybody reads.
const feedPrivateSQL = ` AND (proposal IS NULL OR action = 'approve'
	OR EXISTS (SELECT 1 FROM proposals p WHERE p.id = audit_log.proposal AND p.agent = +?))`

// FeedRead reads workspace ws's audit rows of q's projects after q's
// position, in id order, at most q.Limit (memory.DefaultChangesLimit when
// 0, at most memory.MaxChangesLimit), in one read snapshot together with
// the file's identity and its last acknowledged audit row (rows after it
// are left out until their batch is acknowledged). A position of another
// file (identity or row time differ, or the id is not in the file) is
// invalid, "expired".
func (s *Store) FeedRead(ctx context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	if len(q.Projects) == 0 {
		return memory.FeedPage{}, memory.Errorf(memory.CodeInvalid, "a feed read of workspace %s names no project", ws)
	}
	var w *workspace
	for _, p := range q.Projects {
		var err error
		if w, err = s.requireProject(ctx, memory.ProjectRef{Workspace: ws, Project: p.Project}); err != nil {
			return memory.FeedPage{}, err
		}
	}
	limit := clampLimit(q.Limit, memory.DefaultChangesLimit, memory.MaxChangesLimit)
	// Loaded before the snapshot begins: published after COMMIT, so the
	// snapshot holds every row up to it.
	confirmed := w.confirmed.Load()
	if confirmed < 0 {
		return memory.FeedPage{}, memory.Errorf(memory.CodeUnavailable, "the feed of workspace %s is not ready: its last audit id could not be read; retry", ws)
	}
	tx, err := w.pool.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return memory.FeedPage{}, fmt.Errorf("feed of %s: %w", ws, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	var page memory.FeedPage
	if err := tx.QueryRowContext(ctx, `SELECT token FROM workspace_identity WHERE one = 1`).Scan(&page.Identity); err != nil {
		return memory.FeedPage{}, fmt.Errorf("feed of %s: identity: %w", ws, err)
	}
	if q.Identity != "" && q.Identity != page.Identity {
		return memory.FeedPage{}, errExpired(ws, "was replaced by another file (deleted and created anew, or restored from another server's copy)")
	}
	err = tx.QueryRowContext(ctx, feedEndSQL, confirmed).Scan(&page.EndID, &page.EndStamp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return memory.FeedPage{}, fmt.Errorf("feed of %s: end: %w", ws, err)
	}
	if q.After > 0 {
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT at FROM audit_log WHERE id = +?`, q.After).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) || err == nil && at != q.Stamp {
			return memory.FeedPage{}, errExpired(ws, "was restored from an older copy")
		}
		if err != nil {
			return memory.FeedPage{}, fmt.Errorf("feed of %s: position: %w", ws, err)
		}
	}
	if q.EndOnly {
		page.Complete = true
		return page, nil
	}
	floor := int64(math.MinInt64)
	if q.After == 0 && !q.Floor.IsZero() {
		floor = q.Floor.UnixNano()
	}
	for _, p := range q.Projects {
		query, args := feedRowsSQL, []any{p.Project, q.After, page.EndID, floor}
		if p.Private {
			query += feedPrivateSQL
			args = append(args, p.Viewer)
		}
		rows, err := tx.QueryContext(ctx, query+` ORDER BY id LIMIT +?`, append(args, limit)...)
		if err != nil {
			return memory.FeedPage{}, fmt.Errorf("feed of %s/%s: %w", ws, p.Project, err)
		}
		if page.Rows, err = appendFeedRows(page.Rows, rows, p.Project); err != nil {
			return memory.FeedPage{}, fmt.Errorf("feed of %s/%s: %w", ws, p.Project, err)
		}
	}
	// Each project gave at most limit rows; fewer than limit in all means
	// every project gave all it had up to the end.
	page.Complete = len(page.Rows) < limit
	slices.SortFunc(page.Rows, func(a, b memory.FeedRow) int { return cmp.Compare(a.ID, b.ID) })
	if len(page.Rows) > limit {
		page.Rows = page.Rows[:limit]
	}
	return page, nil
}

// appendFeedRows appends the rows of project to out and closes rows.
func appendFeedRows(out []memory.FeedRow, rows *sql.Rows, project string) ([]memory.FeedRow, error) {
	defer rows.Close()
	for rows.Next() {
		r := memory.FeedRow{Project: project}
		var at int64
		if err := rows.Scan(&r.ID, &r.Agent, &r.Action, &r.Slug, &r.Version, &at, &r.Proposal, &r.Client); err != nil {
			return nil, err
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, rows.Err()
}
