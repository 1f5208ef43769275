package store

import (
	"context"
	"fmt"
	"time"

	"munin/internal/memory"
)

// CountWritesSince counts a project's writes at or after since; the write
// budget is built on it. A write is an audit row of a remember, a forget or
// a proposal (countedActions): rows of `munin import` do not count, nor do
// approvals and rejections, whose proposal counted already.
func (s *Store) CountWritesSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (int, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, err
	}
	var n int
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) FROM audit_log WHERE project = ? AND at >= ? AND action IN `+countedActions,
		ref.Project, since.UnixNano()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count writes of %s: %w", ref, err)
	}
	return n, nil
}

// countedActions are the audit actions the write budget counts: what a
// caller wrote (a version, or a proposal waiting for review). An approval
// writes the version its proposal already counted for.
const countedActions = `('remember', 'forget', 'propose')`

// WrittenSince counts a project's writes at or after since (as
// CountWritesSince) and the content bytes they wrote: of the version for a
// remember or forget, of the proposal for a propose. octet_length reads a
// row's size without its content.
func (s *Store) WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (writes, bytes int, err error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, 0, err
	}
	// +?: see stmtCacheSize.
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(coalesce(octet_length(v.content), octet_length(p.content))), 0)
		FROM audit_log a
		LEFT JOIN versions v ON a.action <> 'propose' AND v.project = a.project AND v.slug = a.slug AND v.version = a.version
		LEFT JOIN proposals p ON a.action = 'propose' AND p.id = a.proposal
		WHERE a.project = +? AND a.at >= +? AND a.action IN `+countedActions,
		ref.Project, since.UnixNano()).Scan(&writes, &bytes); err != nil {
		return 0, 0, fmt.Errorf("count writes of %s: %w", ref, err)
	}
	return writes, bytes, nil
}

// clampLimit applies a default to limit <= 0 and caps it at max.
func clampLimit(limit, def, max int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, max)
}

// fromNanos turns a stored unix-nanosecond time back into a UTC time.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
