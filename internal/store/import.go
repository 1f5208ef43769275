package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"munin/internal/memory"
)

// actionImport marks the audit rows of versions written by ImportVersions.
// They are not counted against the write budget (CountWritesSince).
const actionImport = "import"

// ImportResult counts what ImportVersions did with a batch.
type ImportResult struct {
	// Imported versions were written; Skipped ones were already present with
	// identical fields.
	Imported, Skipped int
}

// ImportError says which version of an ImportVersions batch was refused;
// Err carries the memory.Error code (invalid, conflict, too_large).
type ImportError struct {
	Index int
	Err   error
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("version %d of the batch: %v", e.Index, e.Err)
}

// Unwrap exposes Err, so memory.ErrorCode sees its code.
func (e *ImportError) Unwrap() error { return e.Err }

// ValidateVersion checks one version as an import brings it: the rules of a
// remember (slug, tags, title, content, agent) plus what a stored version
// always has (a version number, a time, no content in a tombstone).
func ValidateVersion(v memory.Version, maxContent int) error {
	if err := memory.ValidateSlug(v.Slug); err != nil {
		return err
	}
	if v.Version < 1 {
		return memory.Errorf(memory.CodeInvalid, "%s: version %d must be 1 or more", v.Slug, v.Version)
	}
	if err := memory.ValidateTags(v.Tags); err != nil {
		return err
	}
	// The same checks as remember (title) and key creation (agent).
	if err := memory.ValidateText("content", v.Content, maxContent); err != nil {
		return err
	}
	if err := memory.ValidateTitle(v.Title); err != nil {
		return fmt.Errorf("%s v%d: %w", v.Slug, v.Version, err)
	}
	if v.Agent == "" {
		return memory.Errorf(memory.CodeInvalid, "%s v%d: agent must not be empty", v.Slug, v.Version)
	}
	if err := memory.ValidateAgent(v.Agent); err != nil {
		return fmt.Errorf("%s v%d: %w", v.Slug, v.Version, err)
	}
	switch {
	case v.CreatedAt.IsZero():
		return memory.Errorf(memory.CodeInvalid, "%s v%d: created_at is missing", v.Slug, v.Version)
	case !time.Unix(0, v.CreatedAt.UnixNano()).Equal(v.CreatedAt):
		// Times are stored as Unix nanoseconds, which end in 2262.
		return memory.Errorf(memory.CodeInvalid, "%s v%d: created_at %s is outside 1678–2262", v.Slug, v.Version, v.CreatedAt.Format(time.RFC3339))
	case v.Deleted && v.Content != "":
		return memory.Errorf(memory.CodeInvalid, "%s v%d: a tombstone (deleted) carries no content", v.Slug, v.Version)
	case !v.Deleted && strings.TrimSpace(v.Content) == "":
		// remember refuses it too: only a tombstone is empty.
		return memory.Errorf(memory.CodeInvalid, "%s v%d: content must not be empty (only a tombstone is)", v.Slug, v.Version)
	}
	return nil
}

// ImportVersions writes versions verbatim — number, agent, time, tombstone
// flag — into a project, through the workspace's single writer and in one
// transaction: either the whole batch is applied or nothing of it.
//
// It is idempotent: a version already present with identical fields is
// skipped. A present version with other fields is a conflict, and a version
// that does not directly follow the slug's latest one (a gap) is invalid; so
// a slug's versions must come in order. Each written version updates the
// entry's latest state (as a remember or forget would) and gets an audit row
// of action "import" with its own agent and time. The failing version is
// named by an *ImportError.
func (s *Store) ImportVersions(ctx context.Context, ref memory.ProjectRef, vs []memory.Version, maxContent int) (ImportResult, error) {
	tags := make([]string, len(vs))
	for i, v := range vs {
		err := ValidateVersion(v, maxContent)
		if err == nil {
			tags[i], err = encodeTags(v.Tags)
		}
		if err != nil {
			return ImportResult{}, &ImportError{Index: i, Err: err}
		}
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return ImportResult{}, err
	}
	val, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		return applyImport(tx, ref.Project, vs, tags)
	})
	if err != nil {
		return ImportResult{}, fmt.Errorf("import into %s: %w", ref, err)
	}
	return val.(ImportResult), nil
}

// slugState is an entry's latest version as the import batch goes along.
type slugState struct {
	latest  int
	deleted bool
}

// applyImport is one ImportVersions batch inside the writer's transaction.
func applyImport(tx *sql.Tx, project string, vs []memory.Version, tags []string) (ImportResult, error) {
	var res ImportResult
	states := map[string]*slugState{}
	for i, v := range vs {
		fail := func(err error) (ImportResult, error) { return ImportResult{}, &ImportError{Index: i, Err: err} }
		same, err := compareExisting(tx, project, v, tags[i])
		if err != nil {
			return fail(err)
		}
		if same {
			res.Skipped++
			continue
		}
		st := states[v.Slug]
		if st == nil {
			st = &slugState{}
			err := tx.QueryRow(`SELECT latest_version, deleted FROM entries WHERE project = ? AND slug = ?`,
				project, v.Slug).Scan(&st.latest, &st.deleted)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fail(fmt.Errorf("read latest version of %s: %w", v.Slug, err))
			}
			states[v.Slug] = st
		}
		switch {
		case v.Version != st.latest+1:
			return fail(memory.Errorf(memory.CodeInvalid, "%s v%d does not follow the latest version %d (versions must be gapless and in order)", v.Slug, v.Version, st.latest))
		case v.Deleted && st.latest == 0:
			return fail(memory.Errorf(memory.CodeInvalid, "%s v%d: a tombstone cannot be the first version", v.Slug, v.Version))
		case v.Deleted && st.deleted:
			return fail(memory.Errorf(memory.CodeInvalid, "%s v%d: a tombstone cannot follow a tombstone", v.Slug, v.Version))
		}
		if err := insertImported(tx, project, v, tags[i]); err != nil {
			return fail(err)
		}
		st.latest, st.deleted = v.Version, v.Deleted
		res.Imported++
	}
	return res, nil
}

// compareExisting reports whether v is already stored with identical fields;
// stored with other fields is a conflict.
func compareExisting(tx *sql.Tx, project string, v memory.Version, tags string) (bool, error) {
	row := tx.QueryRow(`SELECT `+versionCols+` FROM versions v WHERE v.project = ? AND v.slug = ? AND v.version = ?`,
		project, v.Slug, v.Version)
	old, err := scanVersion(row)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s v%d: %w", v.Slug, v.Version, err)
	}
	var diff string
	switch {
	case old.Title != v.Title:
		diff = "title"
	case old.Content != v.Content:
		diff = "content"
	case !slices.Equal(old.Tags, v.Tags) && !(len(old.Tags) == 0 && len(v.Tags) == 0):
		diff = "tags"
	case old.Agent != v.Agent:
		diff = "agent"
	case old.Deleted != v.Deleted:
		diff = "deleted"
	case !old.CreatedAt.Equal(v.CreatedAt):
		diff = "created_at"
	default:
		return true, nil
	}
	return false, memory.Errorf(memory.CodeConflict, "%s v%d already exists with a different %s", v.Slug, v.Version, diff)
}

// insertImported writes one version, the entry's new latest state and the
// audit row, like applyWrite does for a remember, with the version's own time.
func insertImported(tx *sql.Tx, project string, v memory.Version, tags string) error {
	at := v.CreatedAt.UnixNano()
	if _, err := tx.Exec(`INSERT INTO entries (project, slug, latest_version, deleted, title, tags, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project, slug) DO UPDATE SET latest_version = excluded.latest_version,
			deleted = excluded.deleted, title = excluded.title, tags = excluded.tags, updated_at = excluded.updated_at`,
		project, v.Slug, v.Version, v.Deleted, v.Title, tags, at); err != nil {
		return fmt.Errorf("upsert entry %s: %w", v.Slug, err)
	}
	if _, err := tx.Exec(`INSERT INTO versions (project, slug, version, title, content, tags, agent, deleted, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		project, v.Slug, v.Version, v.Title, v.Content, tags, v.Agent, v.Deleted, at); err != nil {
		return fmt.Errorf("insert %s v%d: %w", v.Slug, v.Version, err)
	}
	if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at) VALUES (?, ?, ?, ?, ?, ?)`,
		project, v.Agent, actionImport, v.Slug, v.Version, at); err != nil {
		return fmt.Errorf("insert audit row for %s v%d: %w", v.Slug, v.Version, err)
	}
	return nil
}
