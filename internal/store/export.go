package store

import (
	"context"
	"fmt"

	"munin/internal/memory"
)

// ScanVersions calls fn with every version of every entry of a project,
// tombstones included, ordered by slug and then version, and stops at fn's
// first error. It reads with one statement, so the whole scan sees one
// snapshot even while the server writes. `munin export` is built on it.
func (s *Store) ScanVersions(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) error {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return err
	}
	// UNIQUE(project, slug, version) is an index in exactly this order.
	// +?: see stmtCacheSize.
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT `+versionCols+`
		FROM versions v WHERE v.project = +? ORDER BY v.slug, v.version`, ref.Project)
	if err != nil {
		return fmt.Errorf("scan versions of %s: %w", ref, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return fmt.Errorf("scan versions of %s: %w", ref, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan versions of %s: %w", ref, err)
	}
	return nil
}
