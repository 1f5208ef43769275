package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"munin/internal/memory"
)

// "As of" reads: the memory as it was at a time. Versions are append-only
// and carry their creation time, so the state of a slug at a time is its
// latest version created at or before it; whether the entry was superseded
// then is in supersessions (a supersession counts from its time until the
// slug's next version, which makes the entry live again, see applyWrite).
// Nothing here reads entries' own state columns, which hold only the present.

// supersededAtSQL names the slug whose write superseded slug ?2 of project
// ?1 after its version created at ?3 and at or before ?4, the latest such.
// +?: see stmtCacheSize.
const supersededAtSQL = `SELECT by_slug FROM supersessions
	WHERE project = +?1 AND slug = +?2 AND at > +?3 AND at <= +?4 ORDER BY at DESC LIMIT 1`

// GetAsOf is Get as of time at: version (0: the latest created at or
// before at) and the latest version number then. A slug without a version
// by then, or a version created after it, is not_found. The latest
// version's SupersededBy is the supersession in force at at.
func (s *Store) GetAsOf(ctx context.Context, ref memory.ProjectRef, slug string, version int, at time.Time) (memory.Version, int, error) {
	if err := memory.ValidateSlug(slug); err != nil {
		return memory.Version{}, 0, err
	}
	if version < 0 {
		return memory.Version{}, 0, memory.Errorf(memory.CodeInvalid, "version %d must not be negative", version)
	}
	var v memory.Version
	var latest int
	_, err := s.inSnapshot(ctx, ref, func(tx *sql.Tx) error {
		var max sql.NullInt64 // +?: see stmtCacheSize
		if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM versions WHERE project = +? AND slug = +? AND created_at <= +?`,
			ref.Project, slug, at.UnixNano()).Scan(&max); err != nil {
			return err
		}
		if !max.Valid {
			return memory.Errorf(memory.CodeNotFound, "entry %q did not exist at %s", slug, at.Format(time.RFC3339))
		}
		latest = int(max.Int64)
		want := version
		if want == 0 {
			want = latest
		}
		if want > latest {
			return memory.Errorf(memory.CodeNotFound, "entry %q had no version %d at %s (latest was %d)", slug, version, at.Format(time.RFC3339), latest)
		}
		var err error
		v, err = scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionCols+` FROM versions v WHERE v.project = +? AND v.slug = +? AND v.version = +?`,
			ref.Project, slug, want))
		if err != nil {
			return err
		}
		if want == latest && !v.Deleted {
			v.SupersededBy, err = supersededAt(ctx, tx, ref.Project, slug, v.CreatedAt, at)
		}
		return err
	})
	if me := (*memory.Error)(nil); errors.As(err, &me) {
		return memory.Version{}, 0, me
	}
	if err != nil {
		return memory.Version{}, 0, fmt.Errorf("get %s as of %s: %w", slug, at.Format(time.RFC3339), err)
	}
	return v, latest, nil
}

// supersededAt is the slug that superseded slug (latest version created at
// created) in force at at, "" if none.
func supersededAt(ctx context.Context, tx *sql.Tx, project, slug string, created, at time.Time) (string, error) {
	var by string
	err := tx.QueryRowContext(ctx, supersededAtSQL, project, slug, created.UnixNano(), at.UnixNano()).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return by, err
}

// HistoryAsOf is History of the versions created at or before at; a slug
// without one is not_found.
func (s *Store) HistoryAsOf(ctx context.Context, ref memory.ProjectRef, slug string, limit int, at time.Time) ([]memory.VersionInfo, error) {
	return s.history(ctx, ref, slug, limit, at)
}

// ListAsOf is List as of time at: the entries whose latest version created
// at or before at was not a tombstone, each with that version's title, tags
// and valid_until and the supersession in force at at. Paging and the
// cursor are List's.
func (s *Store) ListAsOf(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery, at time.Time) ([]memory.EntrySummary, string, error) {
	// Entries in slug order (their primary key), each joined with its
	// latest version by then: one lookup of the unique index (project,
	// slug, version) walking back from the newest, then the supersession
	// in force, one lookup of supersessions' primary key. An entry created
	// after at has no such version and drops out of the join. +?: see
	// stmtCacheSize.
	var sb strings.Builder
	sb.WriteString(`SELECT v.slug, v.title, v.version, v.tags, v.created_at, v.valid_until,
		(SELECT s.by_slug FROM supersessions s WHERE s.project = v.project AND s.slug = v.slug
			AND s.at > v.created_at AND s.at <= +?3 ORDER BY s.at DESC LIMIT 1)
		FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug
			AND v.version = (SELECT max(x.version) FROM versions x WHERE x.project = e.project AND x.slug = e.slug AND x.created_at <= +?3)
		WHERE e.project = +?1 AND e.slug > +?2 AND v.deleted = 0`)
	return s.listPage(ctx, ref, q, &sb, []any{at.UnixNano()}, "e.slug", "v.tags")
}
