package store

import (
	"context"
	"database/sql"
	"fmt"

	"munin/internal/memory"
)

// scanVersionsSQL selects every version of project ?1 ordered by slug and
// version: UNIQUE(project, slug, version) is an index in exactly this
// order. +?: see stmtCacheSize.
const scanVersionsSQL = `SELECT ` + versionCols + `
	FROM versions v WHERE v.project = +? ORDER BY v.slug, v.version`

// ScanVersions calls fn with every version of every entry of a project,
// tombstones included, ordered by slug and then version, and stops at fn's
// first error. It reads with one statement, so the whole scan sees one
// snapshot even while the server writes.
func (s *Store) ScanVersions(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) error {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return err
	}
	rows, err := ws.pool.reader.QueryContext(ctx, scanVersionsSQL, ref.Project)
	if err != nil {
		return fmt.Errorf("scan versions of %s: %w", ref, err)
	}
	if err := eachVersion(rows, fn); err != nil {
		return fmt.Errorf("scan versions of %s: %w", ref, err)
	}
	return nil
}

// ScanExport is what `munin export` reads: every version of a project as
// ScanVersions gives them (to fv), then every proposal of it — pending,
// approved and rejected — oldest first (to fp), all from one read
// snapshot, so that an approved proposal's version is there too while the
// server writes. It stops at the first error of fv or fp.
func (s *Store) ScanExport(ctx context.Context, ref memory.ProjectRef, fv func(memory.Version) error, fp func(memory.Proposal) error) error {
	_, err := s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, scanVersionsSQL, ref.Project)
		if err != nil {
			return err
		}
		if err := eachVersion(rows, fv); err != nil {
			return err
		}
		prows, err := tx.QueryContext(ctx, `SELECT `+proposalCols+proposalFrom+` WHERE p.project = +? ORDER BY p.id`, ref.Project)
		if err != nil {
			return err
		}
		defer prows.Close()
		for prows.Next() {
			p, _, err := scanProposal(prows, ref)
			if err != nil {
				return err
			}
			if err := fp(p); err != nil {
				return err
			}
		}
		return prows.Err()
	})
	return err
}
