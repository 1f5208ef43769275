package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"munin/internal/memory"
)

// Importing proposals. A proposal's row id is local to its workspace file
// (and so is the id clients see, "<workspace>.<project>.<n>"), so an import
// does not keep it: a proposal is identified by its slug, its proposer and
// its creation time to the nanosecond. The rest of what was proposed —
// base version, title, content, tags, forget, valid_until, supersedes,
// similar — must then match, or the import is a conflict. The decision may
// differ in one direction only: a stored pending proposal takes the
// decision a later export brings (the state only moves forward), while a
// pending line for a stored decided proposal is an earlier state of it and
// is skipped; two different decisions are a conflict.

// ValidateProposal checks one proposal as an import brings it: its write
// as a version's (validateWritten; a proposed forget is a tombstone there),
// a known state and the decision fields that state has (none while
// pending; who and when once decided; the version an approval wrote; the
// reason within memory.MaxReason).
func ValidateProposal(p memory.Proposal, maxContent int) error {
	if err := memory.ValidateSlug(p.Slug); err != nil {
		return err
	}
	what := "proposal for " + p.Slug
	switch p.State {
	case memory.ProposalPending, memory.ProposalApproved, memory.ProposalRejected:
	default:
		return memory.Errorf(memory.CodeInvalid, "%s: state %q must be %s, %s or %s", what, p.State,
			memory.ProposalPending, memory.ProposalApproved, memory.ProposalRejected)
	}
	// A proposal carries the write it proposes as a version carries it.
	err := validateWritten(what, memory.Version{Slug: p.Slug, Title: p.Title, Content: p.Content, Tags: p.Tags,
		Agent: p.Agent, CreatedAt: p.CreatedAt, Deleted: p.Deleted, ValidUntil: p.ValidUntil, Supersedes: p.Supersedes}, maxContent)
	switch {
	case err != nil:
		return err
	case p.BaseVersion < 0:
		return memory.Errorf(memory.CodeInvalid, "%s: base_version %d must not be negative", what, p.BaseVersion)
	case len(p.Similar) > memory.MaxSimilar:
		return memory.Errorf(memory.CodeInvalid, "%s: similar names %d entries, at most %d", what, len(p.Similar), memory.MaxSimilar)
	}
	for _, s := range p.Similar {
		if err := memory.ValidateSlug(s.Slug); err != nil {
			return fmt.Errorf("%s: similar: %w", what, err)
		}
		if err := memory.ValidateTitle(s.Title); err != nil {
			return fmt.Errorf("%s: similar %s: %w", what, s.Slug, err)
		}
	}
	return checkDecision(what, p)
}

// checkDecision checks the decision fields of a proposal against its state.
func checkDecision(what string, p memory.Proposal) error {
	if p.State == memory.ProposalPending {
		if p.DecidedBy != "" || p.DecidedAt != nil || p.Reason != "" || p.Version != 0 {
			return memory.Errorf(memory.CodeInvalid, "%s: a pending proposal has no decided_by, decided_at, reason or version", what)
		}
		return nil
	}
	switch {
	case p.DecidedBy == "":
		return memory.Errorf(memory.CodeInvalid, "%s: an %s proposal needs decided_by", what, p.State)
	case p.DecidedAt == nil:
		return memory.Errorf(memory.CodeInvalid, "%s: an %s proposal needs decided_at", what, p.State)
	case p.State == memory.ProposalApproved && p.Version < 1:
		return memory.Errorf(memory.CodeInvalid, "%s: an approved proposal needs the version it became (1 or more)", what)
	case p.State == memory.ProposalRejected && p.Version != 0:
		return memory.Errorf(memory.CodeInvalid, "%s: a rejected proposal became no version", what)
	}
	if err := memory.ValidateAgent(p.DecidedBy); err != nil {
		return fmt.Errorf("%s: decided_by: %w", what, err)
	}
	if err := checkStorable(what, "decided_at", *p.DecidedAt); err != nil {
		return err
	}
	return memory.ValidateText("reason", p.Reason, memory.MaxReason)
}

// findProposalSQL finds a stored proposal by its import identity: project
// ?1, proposer ?2, slug ?3, created_at ?4. The index (project, agent, …)
// narrows it to the proposer's proposals. +?: see stmtCacheSize.
const findProposalSQL = `SELECT ` + proposalCols + proposalFrom + `
	WHERE p.project = +?1 AND p.agent = +?2 AND p.slug = +?3 AND p.created_at = +?4 ORDER BY p.id LIMIT 1`

// applyImportProposals writes the proposals of one Import batch inside the
// writer's transaction, after its versions, and adds their counts to res.
// A pending proposal counts against the project's bound of pending ones
// (memory.MaxPendingProposals) as one proposed by an agent would: the
// import refuses the line that would go past it.
func applyImportProposals(tx *sql.Tx, project string, ps []memory.Proposal, res ImportResult) (ImportResult, error) {
	if len(ps) == 0 {
		return res, nil
	}
	var pending int
	if err := tx.QueryRow(`SELECT count(*) FROM proposals WHERE project = ? AND state = 'pending'`, project).Scan(&pending); err != nil {
		return ImportResult{}, fmt.Errorf("count pending proposals: %w", err)
	}
	for i, p := range ps {
		fail := func(err error) (ImportResult, error) {
			return ImportResult{}, &ImportError{Index: i, Proposal: true, Err: err}
		}
		old, _, err := scanProposal(tx.QueryRow(findProposalSQL, project, p.Agent, p.Slug, p.CreatedAt.UnixNano()),
			memory.ProjectRef{Project: project})
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if p.State == memory.ProposalPending {
				if pending >= memory.MaxPendingProposals {
					return fail(memory.Errorf(memory.CodeBudgetExhausted,
						"proposal for %s: project %s already has %d proposals waiting for review, the most it holds; decide some first",
						p.Slug, project, pending))
				}
				pending++
			}
			if err := insertImportedProposal(tx, project, p); err != nil {
				return fail(err)
			}
			res.ProposalsImported++
		case err != nil:
			return fail(fmt.Errorf("read proposal for %s: %w", p.Slug, err))
		default:
			decided, err := mergeProposal(tx, project, old, p)
			if err != nil {
				return fail(err)
			}
			if !decided {
				res.ProposalsSkipped++
				continue
			}
			pending--
			res.ProposalsImported++
		}
	}
	return res, nil
}

// mergeProposal compares an imported proposal with the stored one of the
// same identity and applies its decision to a stored pending one (decided
// set); see the top of this file.
func mergeProposal(tx *sql.Tx, project string, old, p memory.Proposal) (decided bool, err error) {
	what := fmt.Sprintf("proposal for %s by %s of %s", p.Slug, p.Agent, p.CreatedAt.Format(time.RFC3339Nano))
	diff := proposalFields(old).diff(proposalFields(p))
	switch {
	case diff != "":
	case old.BaseVersion != p.BaseVersion:
		diff = "base_version"
	case !slices.Equal(old.Similar, p.Similar):
		diff = "similar"
	case p.State == memory.ProposalPending:
		return false, nil // an earlier state of the stored proposal
	case old.State == memory.ProposalPending:
		return true, decideImported(tx, project, old.ID, p)
	case old.State != p.State:
		diff = "state (" + old.State + ")"
	case old.DecidedBy != p.DecidedBy || propNanos(old.DecidedAt) != propNanos(p.DecidedAt) ||
		old.Reason != p.Reason || old.Version != p.Version:
		diff = "decision"
	default:
		return false, nil
	}
	return false, memory.Errorf(memory.CodeConflict, "%s already exists with a different %s", what, diff)
}

// insertImportedProposal writes one proposal with its decision and an
// audit row of action "import" (the proposer, its time, the version an
// approval wrote or 0), as insertImported does for a version. The row gets
// a new id of this file.
func insertImportedProposal(tx *sql.Tx, project string, p memory.Proposal) error {
	tags, err := encodeTags(p.Tags)
	if err != nil {
		return err
	}
	supersedes, err := propJSON(p.Supersedes)
	if err != nil {
		return err
	}
	similar, err := propJSON(p.Similar)
	if err != nil {
		return err
	}
	decidedBy := sql.NullString{String: p.DecidedBy, Valid: p.DecidedBy != ""}
	version := sql.NullInt64{Int64: int64(p.Version), Valid: p.Version != 0}
	r, err := tx.Exec(`INSERT INTO proposals (project, slug, agent, base_version, title, content, tags, deleted,
			valid_until, supersedes, similar, state, created_at, decided_by, decided_at, reason, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		project, p.Slug, p.Agent, p.BaseVersion, p.Title, p.Content, tags, p.Deleted,
		propNanos(p.ValidUntil), supersedes, similar, p.State, p.CreatedAt.UnixNano(),
		decidedBy, propNanos(p.DecidedAt), p.Reason, version)
	if err != nil {
		return fmt.Errorf("insert proposal for %s: %w", p.Slug, err)
	}
	id, err := r.LastInsertId()
	if err != nil {
		return fmt.Errorf("insert proposal for %s: %w", p.Slug, err)
	}
	return auditImportedProposal(tx, project, p.Agent, p.Slug, p.Version, p.CreatedAt.UnixNano(), id)
}

// decideImported applies an imported decision to stored pending proposal
// id, with an audit row of action "import" for the reviewer at its time.
func decideImported(tx *sql.Tx, project string, id int64, p memory.Proposal) error {
	version := sql.NullInt64{Int64: int64(p.Version), Valid: p.Version != 0}
	if _, err := tx.Exec(`UPDATE proposals SET state = ?, decided_by = ?, decided_at = ?, reason = ?, version = ? WHERE id = ?`,
		p.State, p.DecidedBy, propNanos(p.DecidedAt), p.Reason, version, id); err != nil {
		return fmt.Errorf("apply the decision on proposal for %s: %w", p.Slug, err)
	}
	return auditImportedProposal(tx, project, p.DecidedBy, p.Slug, p.Version, p.DecidedAt.UnixNano(), id)
}

// auditImportedProposal writes the audit row of an imported proposal or decision.
func auditImportedProposal(tx *sql.Tx, project, agent, slug string, version int, at, id int64) error {
	if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at, proposal) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		project, agent, actionImport, slug, version, at, id); err != nil {
		return fmt.Errorf("insert audit row for the proposal for %s: %w", slug, err)
	}
	return nil
}
