package store

import (
	"context"
	"database/sql"
	"fmt"

	"munin/internal/memory"
)

// The change sequence of a workspace is the id of its versions table:
// versions are append-only and every write (a remember, a forget, an import)
// adds a row, so "the index reflects every change up to id S" is one number
// the search index can record beside its documents and catch up from.

// ScanLatestSeq is ScanLatest in one read snapshot that also returns the
// workspace's change sequence the scan reflects: every version with an id up
// to it is in the scan's state, none after it.
func (s *Store) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (int64, error) {
	return s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+versionCols+`
			FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
			WHERE e.project = ? AND e.deleted = 0 ORDER BY e.slug`, ref.Project)
		if err != nil {
			return err
		}
		return eachVersion(rows, fn)
	})
}

// Changes calls fn with the latest version, tombstones included, of every
// slug of ref written after the change sequence since, and returns the
// sequence that state reflects (one read snapshot). A returned sequence below
// since means the database is older than whoever recorded since (a restored
// backup): the caller must not trust what it built from the newer state.
func (s *Store) Changes(ctx context.Context, ref memory.ProjectRef, since int64, fn func(memory.Version) error) (int64, error) {
	return s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+versionCols+`
			FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
			WHERE e.project = ? AND e.slug IN (SELECT slug FROM versions WHERE project = ? AND id > ?)`,
			ref.Project, ref.Project, since)
		if err != nil {
			return err
		}
		return eachVersion(rows, fn)
	})
}

// inSnapshot runs read in one read transaction of ref's workspace after
// reading the workspace's change sequence in it, and returns that sequence.
func (s *Store) inSnapshot(ctx context.Context, ref memory.ProjectRef, read func(*sql.Tx) error) (int64, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, err
	}
	tx, err := ws.pool.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", ref, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM versions`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read change sequence of %s: %w", ref.Workspace, err)
	}
	if err := read(tx); err != nil {
		return 0, fmt.Errorf("read %s: %w", ref, err)
	}
	return seq, nil
}

// eachVersion calls fn for every row of versionCols, stopping at its first
// error, and closes rows.
func eachVersion(rows *sql.Rows, fn func(memory.Version) error) error {
	defer rows.Close()
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return rows.Err()
}
