package store

import (
	"context"
	"fmt"
	"time"

	"munin/internal/memory"
)

// CountWritesSince counts a project's audit rows at or after since; the
// write budget is built on it. Rows of `munin import` do not count.
func (s *Store) CountWritesSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (int, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, err
	}
	var n int
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) FROM audit_log WHERE project = ? AND at >= ? AND action <> 'import'`,
		ref.Project, since.UnixNano()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count writes of %s: %w", ref, err)
	}
	return n, nil
}

// WrittenSince counts a project's audit rows at or after since and the
// content bytes of the versions they wrote, as the write budget counts them
// (imports excluded). octet_length reads a row's size without its content.
func (s *Store) WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (writes, bytes int, err error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, 0, err
	}
	// +?: see stmtCacheSize.
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(octet_length(v.content)), 0)
		FROM audit_log a JOIN versions v ON v.project = a.project AND v.slug = a.slug AND v.version = a.version
		WHERE a.project = +? AND a.at >= +? AND a.action <> 'import'`,
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
