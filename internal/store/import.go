package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"munin/internal/memory"
)

// actionImport marks the audit rows of versions written by ImportVersions.
// They are not counted against the write budget (CountWritesSince).
const actionImport = "import"

// ImportResult counts what an import batch did.
type ImportResult struct {
	// Imported versions were written; Skipped ones were already present with
	// identical fields.
	Imported, Skipped int
	// ProposalsImported were written or brought a decision to a stored
	// pending proposal; ProposalsSkipped were already present (see
	// applyImportProposals).
	ProposalsImported, ProposalsSkipped int
}

// ImportBatch is what one import transaction writes: versions, and
// proposals (written after the versions, in the same transaction).
type ImportBatch struct {
	Versions  []memory.Version
	Proposals []memory.Proposal
}

// ImportError says which version (or, with Proposal set, which proposal)
// of an import batch was refused; Err carries the memory.Error code
// (invalid, conflict, too_large, budget_exhausted).
type ImportError struct {
	Index int
	// Proposal: Index counts the batch's proposals, not its versions.
	Proposal bool
	Err      error
}

func (e *ImportError) Error() string {
	what := "version"
	if e.Proposal {
		what = "proposal"
	}
	return fmt.Sprintf("%s %d of the batch: %v", what, e.Index, e.Err)
}

// Unwrap exposes Err, so memory.ErrorCode sees its code.
func (e *ImportError) Unwrap() error { return e.Err }

// ValidateVersion checks one version as an import brings it: the rules of a
// remember (slug, tags, title, content, agent) plus what a stored version
// always has (a version number, a time, no content in a tombstone) and a
// well-formed valid_until and supersedes (checkImportedValidity).
func ValidateVersion(v memory.Version, maxContent int) error {
	if err := memory.ValidateSlug(v.Slug); err != nil {
		return err
	}
	if v.Version < 1 {
		return memory.Errorf(memory.CodeInvalid, "%s: version %d must be 1 or more", v.Slug, v.Version)
	}
	return validateWritten(fmt.Sprintf("%s v%d", v.Slug, v.Version), v, maxContent)
}

// validateWritten checks what a version and a proposal both carry of a
// write (v; what names it in errors), its slug already checked.
func validateWritten(what string, v memory.Version, maxContent int) error {
	if err := memory.ValidateTags(v.Tags); err != nil {
		return err
	}
	// The same checks as remember (title) and key creation (agent).
	if err := memory.ValidateText("content", v.Content, maxContent); err != nil {
		return err
	}
	if err := memory.ValidateTitle(v.Title); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if v.Agent == "" {
		return memory.Errorf(memory.CodeInvalid, "%s: agent must not be empty", what)
	}
	if err := memory.ValidateAgent(v.Agent); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case v.CreatedAt.IsZero():
		return memory.Errorf(memory.CodeInvalid, "%s: created_at is missing", what)
	case v.Deleted && v.Content != "":
		return memory.Errorf(memory.CodeInvalid, "%s: a tombstone (deleted) carries no content", what)
	case !v.Deleted && strings.TrimSpace(v.Content) == "":
		// remember refuses it too: only a tombstone is empty.
		return memory.Errorf(memory.CodeInvalid, "%s: content must not be empty (only a tombstone is)", what)
	}
	if err := checkStorable(what, "created_at", v.CreatedAt); err != nil {
		return err
	}
	return checkImportedValidity(what, v.Slug, v.Deleted, v.ValidUntil, v.Supersedes)
}

// ImportVersions writes versions verbatim — number, agent, time, tombstone
// flag, valid_until and supersedes — into a project, through the
// workspace's single writer and in one transaction: either the whole batch
// is applied or nothing of it. It is Import of a batch without proposals.
//
// It is idempotent: a version already present with identical fields is
// skipped. A present version with other fields is a conflict, and a version
// that does not directly follow the slug's latest one (a gap) is invalid; so
// a slug's versions must come in order. Each written version updates the
// entry's latest state (as a remember or forget would) and gets an audit row
// of action "import" with its own agent and time. The failing version is
// named by an *ImportError.
func (s *Store) ImportVersions(ctx context.Context, ref memory.ProjectRef, vs []memory.Version, maxContent int) (ImportResult, error) {
	return s.Import(ctx, ref, ImportBatch{Versions: vs}, maxContent)
}

// Import writes a batch of versions (as ImportVersions) and proposals (see
// applyImportProposals) in one transaction of the workspace's single
// writer: the whole batch or nothing of it (invariant 6,
// docs/architecture.md#invariant-6-bad-input-changes-nothing). The refused
// version or proposal is named by an *ImportError.
func (s *Store) Import(ctx context.Context, ref memory.ProjectRef, b ImportBatch, maxContent int) (ImportResult, error) {
	enc := make([]importedVersion, len(b.Versions))
	for i, v := range b.Versions {
		err := ValidateVersion(v, maxContent)
		if err == nil {
			enc[i], err = encodeImported(v)
		}
		if err != nil {
			return ImportResult{}, &ImportError{Index: i, Err: err}
		}
	}
	for i, p := range b.Proposals {
		if err := ValidateProposal(p, maxContent); err != nil {
			return ImportResult{}, &ImportError{Index: i, Proposal: true, Err: err}
		}
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return ImportResult{}, err
	}
	val, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		res, err := applyImport(tx, ref.Project, b.Versions, enc)
		if err != nil {
			return nil, err
		}
		return applyImportProposals(tx, ref.Project, b.Proposals, res)
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

// applyImport writes the versions of one Import batch inside the writer's
// transaction. A version's supersedes are recorded when it is written, but
// the slugs it names may come later in the file (export orders by slug), or
// have a later version that made them live again; so which entries are
// superseded is settled once the batch's versions are in (resupersede).
func applyImport(tx *sql.Tx, project string, vs []memory.Version, enc []importedVersion) (ImportResult, error) {
	var res ImportResult
	states := map[string]*slugState{}
	touched := map[string]bool{}
	for i, v := range vs {
		fail := func(err error) (ImportResult, error) { return ImportResult{}, &ImportError{Index: i, Err: err} }
		same, err := compareExisting(tx, project, v)
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
		if err := insertImported(tx, project, v, enc[i]); err != nil {
			return fail(err)
		}
		touched[v.Slug] = true
		for _, s := range v.Supersedes {
			touched[s] = true
		}
		st.latest, st.deleted = v.Version, v.Deleted
		res.Imported++
	}
	if err := resupersede(tx, project, touched); err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

// compareExisting reports whether v is already stored with identical fields;
// stored with other fields is a conflict.
func compareExisting(tx *sql.Tx, project string, v memory.Version) (bool, error) {
	row := tx.QueryRow(`SELECT `+versionCols+` FROM versions v WHERE v.project = ? AND v.slug = ? AND v.version = ?`,
		project, v.Slug, v.Version)
	old, err := scanVersion(row)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s v%d: %w", v.Slug, v.Version, err)
	}
	diff := versionFields(old).diff(versionFields(v))
	switch {
	case diff != "":
	case old.Agent != v.Agent:
		diff = "agent"
	case !old.CreatedAt.Equal(v.CreatedAt):
		diff = "created_at"
	default:
		return true, nil
	}
	return false, memory.Errorf(memory.CodeConflict, "%s v%d already exists with a different %s", v.Slug, v.Version, diff)
}

// insertImported writes one version, the entry's new latest state and the
// audit row, like applyWrite does for a remember, with the version's own
// time; a version that supersedes records it as applyWrite does (supersede).
// As there, a new version makes a superseded entry live again; resupersede
// settles it for the whole batch.
func insertImported(tx *sql.Tx, project string, v memory.Version, enc importedVersion) error {
	at := v.CreatedAt.UnixNano()
	if _, err := tx.Exec(`INSERT INTO entries (project, slug, latest_version, deleted, title, tags, updated_at, valid_until, superseded_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
		ON CONFLICT (project, slug) DO UPDATE SET latest_version = excluded.latest_version,
			deleted = excluded.deleted, title = excluded.title, tags = excluded.tags, updated_at = excluded.updated_at,
			valid_until = excluded.valid_until, superseded_by = NULL`,
		project, v.Slug, v.Version, v.Deleted, v.Title, enc.tags, at, enc.until); err != nil {
		return fmt.Errorf("upsert entry %s: %w", v.Slug, err)
	}
	if _, err := tx.Exec(`INSERT INTO versions (project, slug, version, title, content, tags, agent, deleted, created_at, valid_until, supersedes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		project, v.Slug, v.Version, v.Title, v.Content, enc.tags, v.Agent, v.Deleted, at, enc.until, enc.supersedes); err != nil {
		return fmt.Errorf("insert %s v%d: %w", v.Slug, v.Version, err)
	}
	if err := supersede(tx, project, memory.Write{Slug: v.Slug, Deleted: v.Deleted, Supersedes: v.Supersedes}, v.Version, at); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at) VALUES (?, ?, ?, ?, ?, ?)`,
		project, v.Agent, actionImport, v.Slug, v.Version, at); err != nil {
		return fmt.Errorf("insert audit row for %s v%d: %w", v.Slug, v.Version, err)
	}
	return nil
}
