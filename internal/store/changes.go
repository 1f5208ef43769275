package store

import (
	"context"
	"database/sql"
	"errors"
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
func (s *Store) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	return s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, scanLatestSQL, ref.Project)
		if err != nil {
			return err
		}
		return eachVersion(rows, fn)
	})
}

// scanLatestSQL selects the latest live versions of project ?, in the
// order of the entries' primary key. +?: see stmtCacheSize.
const scanLatestSQL = `SELECT ` + versionCols + `
	FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
	WHERE e.project = +? AND e.deleted = 0 ORDER BY e.slug`

// changesSQL selects the latest versions, tombstones included, of the
// slugs of project ?1 written after change ?2: the changed slugs from the
// index on (project, id), then one entries and one versions lookup each.
// +?: see stmtCacheSize.
const changesSQL = `SELECT ` + versionCols + `
	FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
	WHERE e.project = +?1 AND e.slug IN (SELECT slug FROM versions WHERE project = +?1 AND id > +?2)`

// Changes calls fn with the latest version, tombstones included, of every
// slug of ref written after the change since, and returns the mark of the
// state that reflects (one read snapshot). If the database does not hold
// since (a restored older copy), it returns memory.ErrUnknownMark: whoever
// recorded since must start over.
func (s *Store) Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error) {
	return s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		if since.Seq > 0 {
			var stamp int64
			err := tx.QueryRowContext(ctx, `SELECT created_at FROM versions WHERE id = ?`, since.Seq).Scan(&stamp)
			if errors.Is(err, sql.ErrNoRows) || err == nil && stamp != since.Stamp {
				return memory.ErrUnknownMark
			}
			if err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, changesSQL, ref.Project, since.Seq)
		if err != nil {
			return err
		}
		return eachVersion(rows, fn)
	})
}

// inSnapshot runs read in one read transaction of ref's workspace after
// reading the mark of the workspace's last change in it, and returns that
// mark.
func (s *Store) inSnapshot(ctx context.Context, ref memory.ProjectRef, read func(*sql.Tx) error) (memory.Mark, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.Mark{}, err
	}
	tx, err := ws.pool.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return memory.Mark{}, fmt.Errorf("read %s: %w", ref, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	var m memory.Mark
	err = tx.QueryRowContext(ctx, `SELECT id, created_at FROM versions ORDER BY id DESC LIMIT 1`).Scan(&m.Seq, &m.Stamp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return memory.Mark{}, fmt.Errorf("read change sequence of %s: %w", ref.Workspace, err)
	}
	if err := read(tx); err != nil {
		return memory.Mark{}, fmt.Errorf("read %s: %w", ref, err)
	}
	return m, nil
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
