package service

import (
	"context"
	"strconv"
	"strings"
	"time"

	"munin/internal/memory"
)

// Review before trust: the writes of propose keys (and, where a project
// reviews the writes of agents, of write keys) wait as proposals until an
// admin of the project approves or rejects them. Authorization is here:
// an admin sees and decides every proposal of its project; any other key
// sees only its own agent's; a caller without a key for the proposal's
// project gets the same not_found as for an id that does not exist
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).

// ProposalsRequest lists proposals of a project.
type ProposalsRequest struct {
	Project string `json:"project,omitempty" jsonschema:"workspace/project; default: first key's"`
	// State filters: pending (the default), approved, rejected or all.
	State  string `json:"state,omitempty" jsonschema:"pending (default), approved, rejected or all"`
	Limit  int    `json:"limit,omitempty" jsonschema:"1-200, default 50"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// ProposalView is a proposal as clients see it.
type ProposalView struct {
	ID          string   `json:"id"`
	Project     string   `json:"project"`
	Slug        string   `json:"slug"`
	Agent       string   `json:"agent"`
	BaseVersion int      `json:"base_version"`
	Title       string   `json:"title"`
	Content     string   `json:"content"`
	Tags        []string `json:"tags"`
	// Deleted: the proposal is a forget (as memory.Proposal names it).
	Deleted    bool             `json:"forget,omitempty"`
	ValidUntil *time.Time       `json:"valid_until,omitempty"`
	Supersedes []string         `json:"supersedes,omitempty"`
	Similar    []memory.Similar `json:"similar,omitempty"`
	State      string           `json:"state"`
	CreatedAt  time.Time        `json:"created_at"`
	DecidedBy  string           `json:"decided_by,omitempty"`
	DecidedAt  *time.Time       `json:"decided_at,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	// Version is the version an approval wrote.
	Version int `json:"version,omitempty"`
	// CurrentVersion is the entry's latest version now (0: none): when it is
	// not BaseVersion, the entry moved since the proposal was made.
	CurrentVersion int `json:"current_version"`
}

// ProposalsResult is a page of proposals, oldest first, and the cursor of
// the next page ("" at the end).
type ProposalsResult struct {
	Proposals  []ProposalView `json:"proposals"`
	NextCursor string         `json:"next_cursor"`
}

// ProposalDetail is one proposal with the versions a reviewer compares it
// with: its base (nil for a new slug) and the entry's latest version now
// (nil for none). A tombstone (forget) is an Entry without content, marked
// by BaseForgotten or CurrentForgotten.
type ProposalDetail struct {
	Proposal         ProposalView `json:"proposal"`
	Base             *Entry       `json:"base,omitempty"`
	Current          *Entry       `json:"current,omitempty"`
	BaseForgotten    bool         `json:"base_forgotten,omitempty"`
	CurrentForgotten bool         `json:"current_forgotten,omitempty"`
}

// ApproveRequest approves a proposal. ExpectedVersion must be the entry's
// latest version when the entry moved past the proposal's base (the
// reviewer resolved the two); Title, Content and Tags, when given, replace
// the proposal's (edit, then approve).
type ApproveRequest struct {
	ExpectedVersion *int     `json:"expected_version,omitempty" jsonschema:"the latest version, when it is no longer the proposal's base"`
	Title           string   `json:"title,omitempty" jsonschema:"replaces the proposed title"`
	Content         string   `json:"content,omitempty" jsonschema:"replaces the proposed content"`
	Tags            []string `json:"tags,omitempty" jsonschema:"replace the proposed tags"`
}

// RejectRequest rejects a proposal with a reason its proposer reads.
type RejectRequest struct {
	Reason string `json:"reason" jsonschema:"why, at most 1 KB; the proposer reads it"`
}

// proposalStates are the states ProposalsRequest filters by.
var proposalStates = map[string]string{
	"":                      memory.ProposalPending,
	memory.ProposalPending:  memory.ProposalPending,
	memory.ProposalApproved: memory.ProposalApproved,
	memory.ProposalRejected: memory.ProposalRejected,
	"all":                   "",
}

// Proposals lists proposals of a project of the caller, oldest first: all
// of them for an admin of the project, the caller's own agent's otherwise.
func (s *Service) Proposals(ctx context.Context, c memory.Caller, req ProposalsRequest) (ProposalsResult, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return ProposalsResult{}, err
	}
	if err := readsMemory(key); err != nil {
		return ProposalsResult{}, err
	}
	state, ok := proposalStates[req.State]
	if !ok {
		return ProposalsResult{}, memory.Errorf(memory.CodeInvalid, "state %q must be pending, approved, rejected or all", req.State)
	}
	limit, err := bounded("limit", req.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	if err != nil {
		return ProposalsResult{}, err
	}
	var after int64
	if req.Cursor != "" {
		if after, err = strconv.ParseInt(req.Cursor, 10, 64); err != nil || after < 0 {
			return ProposalsResult{}, memory.Errorf(memory.CodeInvalid, "cursor %q is not a next_cursor of proposals", clipID(req.Cursor))
		}
	}
	agent := ""
	if !reviews(c, key) {
		agent = key.Agent
	}
	// One more than the page tells whether there is a next one.
	ps, cur, err := s.store.Proposals(ctx, key.Project, state, agent, after, limit+1)
	if err != nil {
		return ProposalsResult{}, s.internalErr("proposals", key, err)
	}
	out := ProposalsResult{Proposals: make([]ProposalView, 0, min(len(ps), limit))}
	for i, p := range ps {
		if i == limit {
			out.NextCursor = strconv.FormatInt(ps[i-1].ID, 10)
			break
		}
		out.Proposals = append(out.Proposals, viewOf(key.Project, p, cur[i]))
	}
	return out, nil
}

// viewOf renders a stored proposal of ref for clients.
func viewOf(ref memory.ProjectRef, p memory.Proposal, current int) ProposalView {
	v := ProposalView{
		ID: ProposalID(ref, p.ID), Project: ref.String(), Slug: p.Slug, Agent: p.Agent, BaseVersion: p.BaseVersion,
		Title: p.Title, Content: p.Content, Tags: nonNil(p.Tags), Deleted: p.Deleted, ValidUntil: utcOrNil(p.ValidUntil),
		Supersedes: p.Supersedes, Similar: p.Similar, State: p.State, CreatedAt: p.CreatedAt.UTC(),
		DecidedBy: p.DecidedBy, DecidedAt: utcOrNil(p.DecidedAt), Reason: p.Reason, Version: p.Version,
		CurrentVersion: current,
	}
	return v
}

// noProposal is the one answer for an id that does not exist, belongs to a
// project the caller holds no key for, or is another agent's proposal the
// caller may not see.
func noProposal(id string) error {
	return memory.Errorf(memory.CodeNotFound, "proposal %q not found", clipID(id))
}

// clipID shortens an id or cursor echoed in an error message.
func clipID(s string) string {
	if len(s) > 140 {
		return strings.ToValidUTF8(s[:140], "") + "…"
	}
	return s
}

// proposalKey parses id and returns the caller's key for its project, or
// the not_found of a missing proposal.
func proposalKey(c memory.Caller, id string) (memory.Key, int64, error) {
	if c.ServerAdmin() {
		return memory.Key{}, 0, errMemoryTools
	}
	ref, n, err := ParseProposalID(id)
	if err != nil {
		return memory.Key{}, 0, noProposal(id)
	}
	key, ok := c.KeyFor(ref)
	if !ok {
		return memory.Key{}, 0, noProposal(id)
	}
	return key, n, nil
}

// proposal reads proposal n for key: not_found for another agent's unless
// all (the caller reviews).
func (s *Service) proposal(ctx context.Context, key memory.Key, id string, n int64, all bool) (memory.Proposal, int, error) {
	p, cur, err := s.store.Proposal(ctx, key.Project, n)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return memory.Proposal{}, 0, noProposal(id)
	}
	if err != nil {
		return memory.Proposal{}, 0, s.internalErr("proposal", key, err)
	}
	if !all && p.Agent != key.Agent {
		return memory.Proposal{}, 0, noProposal(id)
	}
	return p, cur, nil
}

// Proposal returns one proposal with its base version and the entry's
// latest version, for a reviewer to compare side by side (or for its
// proposer, to read a decision and its reason).
func (s *Service) Proposal(ctx context.Context, c memory.Caller, id string) (ProposalDetail, error) {
	key, n, err := proposalKey(c, id)
	if err != nil {
		return ProposalDetail{}, err
	}
	p, cur, err := s.proposal(ctx, key, id, n, reviews(c, key))
	if err != nil {
		return ProposalDetail{}, err
	}
	out := ProposalDetail{Proposal: viewOf(key.Project, p, cur)}
	if out.Base, out.BaseForgotten, err = s.versionEntry(ctx, key, p.Slug, p.BaseVersion, cur); err != nil {
		return ProposalDetail{}, err
	}
	if out.Current, out.CurrentForgotten, err = s.versionEntry(ctx, key, p.Slug, cur, cur); err != nil {
		return ProposalDetail{}, err
	}
	return out, nil
}

// versionEntry reads version v of slug as an Entry (nil for 0), tombstones
// included.
func (s *Service) versionEntry(ctx context.Context, key memory.Key, slug string, v, latest int) (*Entry, bool, error) {
	if v == 0 {
		return nil, false, nil
	}
	ver, _, err := s.store.Get(ctx, key.Project, slug, v)
	if err != nil {
		return nil, false, s.internalErr("proposal", key, err)
	}
	return &Entry{
		Project: key.Project.String(), Slug: ver.Slug, Version: ver.Version, Title: ver.Title, Content: ver.Content,
		Tags: nonNil(ver.Tags), Agent: ver.Agent, CreatedAt: ver.CreatedAt.UTC(), LatestVersion: latest,
		ValidUntil: utcOrNil(ver.ValidUntil), Supersedes: ver.Supersedes,
	}, ver.Deleted, nil
}

// reviews tells whether c decides proposals with key: an admin key, and a
// person's write key in the web UI (memory.Role.ReviewsAsPerson says why).
func reviews(c memory.Caller, key memory.Key) bool {
	if c.Person() {
		return key.Role.ReviewsAsPerson()
	}
	return key.Role.Reviews()
}

// reviewer returns the caller's key for the proposal's project if it may
// decide proposals there (reviews).
func reviewer(c memory.Caller, id, what string) (memory.Key, int64, error) {
	key, n, err := proposalKey(c, id)
	if err != nil {
		return memory.Key{}, 0, err
	}
	if !reviews(c, key) {
		return memory.Key{}, 0, memory.Errorf(memory.CodeForbidden, "%s a proposal needs an admin key of %s; the key of %s has role %s",
			what, key.Project, key.Agent, key.Role)
	}
	return key, n, nil
}

// Approve turns a pending proposal into the next version of its entry, the
// proposer recorded as its agent and the reviewer in the audit log.
func (s *Service) Approve(ctx context.Context, c memory.Caller, id string, req ApproveRequest) (WriteResult, error) {
	key, n, err := reviewer(c, id, "approving")
	if err != nil {
		return WriteResult{}, err
	}
	edit, err := s.checkApprove(req)
	if err != nil {
		return WriteResult{}, err
	}
	edit.Client = c.Client() // the reviewer's, for the approval's audit row
	p, _, err := s.proposal(ctx, key, id, n, true)
	if err != nil {
		return WriteResult{}, err
	}
	res, err := s.store.Approve(ctx, key.Project, n, key.Agent, edit)
	if err != nil {
		return WriteResult{}, s.internalErr("approve", key, err)
	}
	// The version is committed: its refresh (and that of the entries it
	// supersedes) is queued before the answer, as for any write
	// (docs/architecture.md#invariant-3-read-your-writes).
	for _, slug := range append([]string{p.Slug}, p.Supersedes...) {
		if err := s.index.Queue(key.Project, slug); err != nil {
			s.log.Error("index refresh not queued", "project", key.Project.String(), "slug", slug, "err", err)
		}
	}
	base := p.BaseVersion
	return WriteResult{Project: key.Project.String(), Slug: res.Slug, Version: res.Version, Proposal: id,
		BaseVersion: &base, CreatedAt: res.CreatedAt.UTC()}, nil
}

// checkApprove checks a reviewer's edit the way remember checks a write.
func (s *Service) checkApprove(req ApproveRequest) (memory.Write, error) {
	if err := checkExpected(req.ExpectedVersion); err != nil {
		return memory.Write{}, err
	}
	if req.Content != "" {
		if strings.TrimSpace(req.Content) == "" {
			return memory.Write{}, memory.Errorf(memory.CodeInvalid, "content must not be blank; leave it out to keep the proposed content")
		}
		if err := memory.ValidateText("content", req.Content, s.opts.MaxContent); err != nil {
			return memory.Write{}, err
		}
	}
	if err := memory.ValidateTitle(req.Title); err != nil {
		return memory.Write{}, err
	}
	w := memory.Write{ExpectedVersion: req.ExpectedVersion, Title: req.Title, Content: req.Content}
	if req.Tags != nil {
		if err := memory.ValidateTags(req.Tags); err != nil {
			return memory.Write{}, err
		}
		w.Tags = dedupe(req.Tags)
	}
	return w, nil
}

// Reject decides a pending proposal against, with a reason its proposer
// reads; the proposal stays.
func (s *Service) Reject(ctx context.Context, c memory.Caller, id string, req RejectRequest) (ProposalView, error) {
	key, n, err := reviewer(c, id, "rejecting")
	if err != nil {
		return ProposalView{}, err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return ProposalView{}, memory.Errorf(memory.CodeInvalid, "reason must not be empty: the proposer reads why")
	}
	if err := memory.ValidateText("reason", req.Reason, memory.MaxReason); err != nil {
		return ProposalView{}, err
	}
	p, err := s.store.Reject(ctx, key.Project, n, key.Agent, c.Client(), req.Reason)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return ProposalView{}, noProposal(id)
	}
	if err != nil {
		return ProposalView{}, s.internalErr("reject", key, err)
	}
	_, cur, err := s.store.Proposal(ctx, key.Project, n)
	if err != nil {
		return ProposalView{}, s.internalErr("reject", key, err)
	}
	return viewOf(key.Project, p, cur), nil
}

// SetReview sets a project's review setting (memory.ReviewOff or
// memory.ReviewAgents): an admin key of the project, or a server-admin key.
func (s *Service) SetReview(ctx context.Context, c memory.Caller, ref memory.ProjectRef, review string) error {
	return s.setSetting(ctx, c, ref, reviewSetting, review)
}

// SetReviewOf is SetReview for a project named "workspace/project" ("":
// the caller's first key's), as REST names it.
func (s *Service) SetReviewOf(ctx context.Context, c memory.Caller, project, review string) error {
	return s.setSettingOf(ctx, c, project, reviewSetting, review)
}

// SetProjectReview is the operator form of SetReview (the command line).
func (s *Service) SetProjectReview(ctx context.Context, ref memory.ProjectRef, review string) error {
	return s.setProjectSetting(ctx, ref, reviewSetting, review)
}

// ProjectReview reads a project's review setting: any key of the project,
// or a server-admin key.
func (s *Service) ProjectReview(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (string, error) {
	return s.projectSetting(ctx, c, ref, reviewSetting)
}

// PendingCount counts the proposals of a project waiting for the caller:
// all of them for an admin of the project, its own agent's otherwise (the
// count in the web UI's header).
func (s *Service) PendingCount(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (int, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return 0, err
	}
	if err := readsMemory(key); err != nil {
		return 0, err
	}
	if reviews(c, key) {
		n, err := s.store.PendingCount(ctx, key.Project)
		if err != nil {
			return 0, s.internalErr("pending count", key, err)
		}
		return n, nil
	}
	ps, _, err := s.store.Proposals(ctx, key.Project, memory.ProposalPending, key.Agent, 0, memory.MaxPendingProposals)
	if err != nil {
		return 0, s.internalErr("pending count", key, err)
	}
	return len(ps), nil
}
