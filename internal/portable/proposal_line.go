package portable

import (
	"fmt"

	"munin/internal/memory"
)

// ProposalLine is one proposal in an export file, written as the only
// member of a line: {"proposal":{…}}. Version lines keep their form, and
// the member name tells the kinds apart at a glance (grep, jq 'select(.proposal)').
// Export writes the proposals after all versions, oldest first. The row id
// is left out: it is local to the workspace file, and an import identifies
// a proposal by slug, agent and created_at instead (store/import_proposals.go).
//
// A proposal is a write waiting for review, so its first fields are those
// of a version line (Line) with the proposed write: Agent is the proposer,
// CreatedAt when it proposed, Deleted a proposed forget, and Version the
// version an approval wrote (0 while there is none). The review's fields
// follow; optional ones are left out when empty, as in Line.
type ProposalLine struct {
	Line
	// BaseVersion is the entry's latest version when it was proposed (0: a
	// new entry); Similar the duplicate hints found then.
	BaseVersion int              `json:"base_version"`
	Similar     []memory.Similar `json:"similar,omitempty"`
	// State is pending, approved or rejected; the fields after it are the
	// decision (none while pending): who decided, when, and why (a
	// rejection).
	State     string `json:"state"`
	DecidedBy string `json:"decided_by,omitempty"`
	DecidedAt string `json:"decided_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// proposalLine is the line of a stored proposal.
func proposalLine(p memory.Proposal) *ProposalLine {
	return &ProposalLine{
		Line: lineOf(memory.Version{Slug: p.Slug, Version: p.Version, Title: p.Title, Content: p.Content, Tags: p.Tags,
			Agent: p.Agent, CreatedAt: p.CreatedAt, Deleted: p.Deleted, ValidUntil: p.ValidUntil, Supersedes: p.Supersedes}),
		BaseVersion: p.BaseVersion, Similar: p.Similar,
		State: p.State, DecidedBy: p.DecidedBy, DecidedAt: formatOptional(p.DecidedAt), Reason: p.Reason,
	}
}

// parseProposal turns a proposal line into a proposal; store.ValidateProposal
// checks the rest.
func parseProposal(l ProposalLine) (memory.Proposal, error) {
	if err := memory.ValidateSlug(l.Slug); err != nil {
		return memory.Proposal{}, fmt.Errorf("proposal: %w", err)
	}
	what := "proposal for " + l.Slug
	v, err := parseWritten(what, l.Line)
	if err != nil {
		return memory.Proposal{}, err
	}
	p := memory.Proposal{Slug: v.Slug, Version: v.Version, Title: v.Title, Content: v.Content, Tags: v.Tags,
		Agent: v.Agent, CreatedAt: v.CreatedAt, Deleted: v.Deleted, ValidUntil: v.ValidUntil, Supersedes: v.Supersedes,
		BaseVersion: l.BaseVersion, Similar: l.Similar, State: l.State, DecidedBy: l.DecidedBy, Reason: l.Reason}
	p.DecidedAt, err = parseOptional(what, "decided_at", l.DecidedAt)
	return p, err
}
