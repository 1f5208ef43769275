package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"munin/internal/memory"
)

// importedVersion is a version's columns as the import stores them,
// encoded once before the writer's transaction.
type importedVersion struct {
	tags, supersedes string
	until            sql.NullInt64
}

// encodeImported encodes the columns of v that are stored as JSON or nanoseconds.
func encodeImported(v memory.Version) (importedVersion, error) {
	tags, err := encodeTags(v.Tags)
	if err != nil {
		return importedVersion{}, err
	}
	supersedes, err := propJSON(v.Supersedes)
	if err != nil {
		return importedVersion{}, err
	}
	return importedVersion{tags: tags, supersedes: supersedes, until: propNanos(v.ValidUntil)}, nil
}

// writtenFields are what a version and a proposal both carry of a write,
// as an import compares them with what is stored.
type writtenFields struct {
	title, content   string
	tags, supersedes []string
	deleted          bool
	until            sql.NullInt64
}

func versionFields(v memory.Version) writtenFields {
	return writtenFields{v.Title, v.Content, v.Tags, v.Supersedes, v.Deleted, propNanos(v.ValidUntil)}
}

func proposalFields(p memory.Proposal) writtenFields {
	return writtenFields{p.Title, p.Content, p.Tags, p.Supersedes, p.Deleted, propNanos(p.ValidUntil)}
}

// diff names the first field in which a and b differ, "" when none. No
// tags and an empty list of them are the same.
func (a writtenFields) diff(b writtenFields) string {
	for _, f := range []struct {
		name string
		same bool
	}{
		{"title", a.title == b.title},
		{"content", a.content == b.content},
		{"tags", slices.Equal(a.tags, b.tags)},
		{"deleted", a.deleted == b.deleted},
		{"valid_until", a.until == b.until},
		{"supersedes", slices.Equal(a.supersedes, b.supersedes)},
	} {
		if !f.same {
			return f.name
		}
	}
	return ""
}

// checkStorable refuses a time that Unix nanoseconds, as the store keeps
// times, cannot hold (before 1678 or after 2262).
func checkStorable(what, field string, t time.Time) error {
	if !time.Unix(0, t.UnixNano()).Equal(t) {
		return memory.Errorf(memory.CodeInvalid, "%s: %s %s is outside 1678–2262", what, field, t.Format(time.RFC3339))
	}
	return nil
}

// checkImportedValidity checks the valid_until and supersedes of an
// imported version or proposal (what names it). History is taken as it was
// recorded: a valid_until already past, or one a remember would refuse as
// too far ahead, stays; the slugs supersedes names need not exist yet, as
// they may come later in the file. What is checked is what the store relies
// on: the form and number of the slugs, no slug twice or itself, a storable
// time, and neither field on a tombstone (a forget carries none).
func checkImportedValidity(what, slug string, deleted bool, until *time.Time, supersedes []string) error {
	if deleted && (until != nil || len(supersedes) > 0) {
		return memory.Errorf(memory.CodeInvalid, "%s: a forget (deleted) carries no valid_until or supersedes", what)
	}
	if until != nil {
		if err := checkStorable(what, "valid_until", *until); err != nil {
			return err
		}
	}
	if n := len(supersedes); n > memory.MaxSupersedes {
		return memory.Errorf(memory.CodeInvalid, "%s: supersedes names %d slugs, at most %d", what, n, memory.MaxSupersedes)
	}
	for i, s := range supersedes {
		if err := memory.ValidateSlug(s); err != nil {
			return fmt.Errorf("%s: supersedes: %w", what, err)
		}
		switch {
		case s == slug:
			return memory.Errorf(memory.CodeInvalid, "%s: supersedes names %s itself", what, s)
		case slices.Contains(supersedes[:i], s):
			return memory.Errorf(memory.CodeInvalid, "%s: supersedes names %s twice", what, s)
		}
	}
	return nil
}

// resupersedeSQL sets whether the entries of project ?1 named in the JSON
// array ?2 are superseded, by the rule the writer keeps (applyWrite) and
// "as of" reads read (asof.go): by the latest supersession recorded after
// the entry's latest version, none when that version is a tombstone. Only
// entries that are marked or have a supersession on record are written, so
// a batch without supersessions costs one lookup per entry. +?: see
// stmtCacheSize.
const resupersedeSQL = `UPDATE entries SET superseded_by = CASE WHEN deleted THEN NULL ELSE (
		SELECT s.by_slug FROM supersessions s
		WHERE s.project = entries.project AND s.slug = entries.slug
			AND s.at > (SELECT v.created_at FROM versions v
				WHERE v.project = entries.project AND v.slug = entries.slug AND v.version = entries.latest_version)
		ORDER BY s.at DESC LIMIT 1) END
	WHERE project = +?1 AND slug IN (SELECT value FROM json_each(+?2))
		AND (superseded_by IS NOT NULL OR EXISTS (SELECT 1 FROM supersessions s WHERE s.project = entries.project AND s.slug = entries.slug))`

// resupersede settles entries.superseded_by of the slugs an import batch
// wrote versions of or named in supersedes, in one statement. An import
// brings history in slug order, not in time order: a supersession may be
// recorded before the entry it concerns arrives, or before that entry's
// later version that made it live again. Deriving the column from
// supersessions and the latest version gives, whatever the order, the
// state the writes gave at their times.
func resupersede(tx *sql.Tx, project string, slugs map[string]bool) error {
	if len(slugs) == 0 {
		return nil
	}
	list, err := json.Marshal(slices.Collect(maps.Keys(slugs)))
	if err != nil {
		return fmt.Errorf("settle supersessions: %w", err)
	}
	if _, err := tx.Exec(resupersedeSQL, project, string(list)); err != nil {
		return fmt.Errorf("settle supersessions: %w", err)
	}
	return nil
}
