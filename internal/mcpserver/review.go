package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// The review tool: the MCP way for a reviewer agent (an admin key) to do
// what the web UI's review queue and REST's /api/v1/proposals do — list the
// pending proposals, approve one (edited or as proposed) or reject it with a
// reason. One tool with an action rather than three: every tool costs its
// schemas in tools/list, which stays under 6,000 bytes. The tool is listed
// for every caller (tools/list is the same for everyone); the service
// decides, so a key that may not decide gets the service's forbidden, and a
// proposer's list shows its own proposals. To compare a proposal with its
// base and the entry's latest version, a reviewer reads them with get
// (version base_version; the latest is current_version).

// Review actions.
const (
	actionList    = "list"
	actionApprove = "approve"
	actionReject  = "reject"
)

// reviewArgs are the review tool's arguments. Which ones an action takes is
// said once, in the tool's description, and checked by check, so that a
// misplaced one is named, never ignored.
type reviewArgs struct {
	Action          string   `json:"action" jsonschema:"enum=list,enum=approve,enum=reject"`
	Project         string   `json:"project,omitempty"`
	State           string   `json:"state,omitempty"`
	Cursor          string   `json:"cursor,omitempty"`
	ID              string   `json:"id,omitempty"`
	Reason          string   `json:"reason,omitempty"`
	ExpectedVersion *int     `json:"expected_version,omitempty"`
	Title           string   `json:"title,omitempty"`
	Content         string   `json:"content,omitempty"`
	Tags            []string `json:"tags,omitempty"`
}

// reviewDescription is the review tool's description: what each action
// takes, said once rather than in each argument's description.
const reviewDescription = "Writes waiting for review. list: state pending (default), approved, rejected or all; yours unless your key is admin. " +
	"approve id: title, content, tags replace the proposed ones; expected_version once the entry moved past base_version. " +
	"reject id with a reason the proposer reads."

// reviewResult answers every action: a page of proposals (list, with the
// cursor of the next page, "" at the end), or the one proposal just
// decided, in its new state (approved, with the version it wrote, or
// rejected, with the reason). One shape for all, so that one output schema
// matches every result.
type reviewResult struct {
	Proposals  []service.ProposalView `json:"proposals"`
	NextCursor string                 `json:"next_cursor"`
}

// check refuses an argument the action does not take: an agent that
// passes a reason to approve, or an id to list, has misread the tool, and
// acting on the rest would do something it did not mean. Project is taken
// by every action (the instructions say every tool but changes takes one); for a
// decision, the id names its project and the two must agree.
func (a reviewArgs) check() error {
	given := map[string]bool{
		"state": a.State != "", "cursor": a.Cursor != "", "id": a.ID != "", "reason": a.Reason != "",
		"expected_version": a.ExpectedVersion != nil, "title": a.Title != "", "content": a.Content != "", "tags": a.Tags != nil,
	}
	var takes []string
	switch a.Action {
	case actionList:
		takes = []string{"project", "state", "cursor"}
	case actionApprove:
		takes = []string{"project", "id", "expected_version", "title", "content", "tags"}
	case actionReject:
		takes = []string{"project", "id", "reason"}
	default:
		return memory.Errorf(memory.CodeInvalid, "action %q must be list, approve or reject", oneLine(a.Action, 40))
	}
	for _, name := range []string{"state", "cursor", "id", "reason", "expected_version", "title", "content", "tags"} {
		if given[name] && !slices.Contains(takes, name) {
			return memory.Errorf(memory.CodeInvalid, "review %s does not take %s (it takes %s)", a.Action, name, strings.Join(takes, ", "))
		}
	}
	if a.Action == actionList {
		return nil
	}
	if a.ID == "" {
		return memory.Errorf(memory.CodeInvalid, "missing argument id: review %s needs a proposal's id (review list shows them)", a.Action)
	}
	if a.Project != "" {
		if ref, _, err := service.ParseProposalID(a.ID); err == nil && ref.String() != a.Project {
			return memory.Errorf(memory.CodeInvalid, "proposal %s is not one of project %s", oneLine(a.ID, 140), oneLine(a.Project, 140))
		}
	}
	return nil
}

func (h handlers) review(ctx context.Context, c memory.Caller, a reviewArgs) (reviewResult, string, error) {
	// a.check() has run: typed runs the arguments' own check.
	switch a.Action {
	case actionApprove:
		res, err := h.svc.Approve(ctx, c, a.ID, service.ApproveRequest{
			ExpectedVersion: a.ExpectedVersion, Title: a.Title, Content: a.Content, Tags: a.Tags})
		if err != nil {
			return reviewResult{}, "", err
		}
		// The answer is the proposal in its new state, the same shape as
		// every other action's; the version is committed whatever this
		// read does.
		d, err := h.svc.Proposal(ctx, c, a.ID)
		if err != nil {
			return reviewResult{}, "", fmt.Errorf("approved %s as %s v%d, then read it back: %w", a.ID, res.Slug, res.Version, err)
		}
		return reviewResult{Proposals: []service.ProposalView{d.Proposal}},
			fmt.Sprintf("approved %s: %s v%d in %s", a.ID, res.Slug, res.Version, res.Project), nil
	case actionReject:
		p, err := h.svc.Reject(ctx, c, a.ID, service.RejectRequest{Reason: a.Reason})
		if err != nil {
			return reviewResult{}, "", err
		}
		return reviewResult{Proposals: []service.ProposalView{p}},
			fmt.Sprintf("rejected %s (%s in %s): %s", p.ID, p.Slug, p.Project, oneLine(p.Reason, 200)), nil
	}
	res, err := h.svc.Proposals(ctx, c, service.ProposalsRequest{Project: a.Project, State: a.State, Cursor: a.Cursor})
	if err != nil {
		return reviewResult{}, "", err
	}
	return reviewResult{Proposals: res.Proposals, NextCursor: res.NextCursor}, proposalsText(res), nil
}

// proposalsText renders a page of proposals for clients that read only the
// text: each with what a reviewer decides on, the proposed text included.
func proposalsText(res service.ProposalsResult) string {
	var b strings.Builder
	b.WriteString(count(len(res.Proposals), "pending proposal", "pending proposals"))
	if len(res.Proposals) > 0 {
		fmt.Fprintf(&b, " in %s, oldest first:", res.Proposals[0].Project)
	}
	for _, p := range res.Proposals {
		what := oneLine(p.Title, 80) + tagList(p.Tags)
		if p.Deleted {
			what = "(forget)"
		}
		fmt.Fprintf(&b, "\n\n%s: %s by %s, base v%d%s — %s", p.ID, p.Slug, p.Agent, p.BaseVersion, moved(p), what)
		if !p.Deleted {
			fmt.Fprintf(&b, "\n%s", clipText(p.Content, 1000))
		}
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "\n\nmore: call review list with cursor %q", res.NextCursor)
	}
	return b.String()
}

// moved says when the entry has moved past a proposal's base: approving it
// then needs expected_version, after comparing.
func moved(p service.ProposalView) string {
	if p.CurrentVersion == p.BaseVersion {
		return ""
	}
	return fmt.Sprintf(" (now v%d)", p.CurrentVersion)
}

// clipText cuts s to n runes, saying how much the text leaves out.
func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%s… (%d more characters in the structured content)", string(r[:n]), len(r)-n)
	}
	return s
}
