package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// The review queue (issue 23): a project's pending proposals for its admins
// to approve, edit and approve, or reject with a reason; a proposer's own
// proposals, with the decisions on them, for everyone else who may propose.
// The service decides who sees which proposal and who may decide; the page
// only leaves out buttons a key could not use.

// reviewPageSize is how many proposals one page of the queue lists.
const reviewPageSize = 50

// reviewStates are the queue's filters, in the order the page shows them.
var reviewStates = []string{memory.ProposalPending, memory.ProposalRejected, memory.ProposalApproved}

// reviewPage is the data of the review queue.
type reviewPage struct {
	State     string
	States    []string
	Proposals []proposalRow
	// Next is the cursor of the next page ("": this is the last); the
	// pending queue is one page, newest first, decided proposals come in
	// pages, oldest first (the service's order).
	Next string
	// Reviews: the key in view approves and rejects (an admin key, or a
	// write key: memory.Role.ReviewsAsPerson); otherwise the page lists
	// the caller's own proposals.
	Reviews bool
}

// proposalRow is a proposal as the pages show it: N is its number within
// the project (the last part of its id, and of its page's URL); Ref is the
// project, for links in shared templates; Age is how long ago it was made.
type proposalRow struct {
	service.ProposalView
	N   int64
	Ref memory.ProjectRef
	Age string
}

// review lists a project's proposals in one state: the pending queue
// newest first, decided ones in the service's pages.
func (h *Handler) review(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	d := reviewPage{State: r.FormValue("state"), States: reviewStates, Reviews: key.Role.ReviewsAsPerson()}
	if d.State == "" {
		d.State = memory.ProposalPending
	}
	var list []service.ProposalView
	if d.State == memory.ProposalPending {
		if list, err = h.pendingNewestFirst(r, rq, key.Project); err != nil {
			return err
		}
	} else {
		res, err := h.svc.Proposals(r.Context(), rq.caller, service.ProposalsRequest{
			Project: key.Project.String(), State: d.State, Limit: reviewPageSize, Cursor: r.FormValue("cursor"),
		})
		if err != nil {
			return err
		}
		list, d.Next = res.Proposals, res.NextCursor
	}
	for _, p := range list {
		row, err := h.proposalRow(key.Project, p)
		if err != nil {
			return err
		}
		d.Proposals = append(d.Proposals, row)
	}
	title := "Review queue"
	if !d.Reviews {
		title = "My proposals"
	}
	h.render(w, r, rq, http.StatusOK, "review", projectView(key, title, d))
	return nil
}

// pendingNewestFirst returns the project's pending proposals the caller
// sees, newest first. The service pages them oldest first; the pending
// queue is bounded (memory.MaxPendingProposals), so the page reads all of
// it, in a bounded number of pages.
func (h *Handler) pendingNewestFirst(r *http.Request, rq *request, ref memory.ProjectRef) ([]service.ProposalView, error) {
	var all []service.ProposalView
	cursor := ""
	for range memory.MaxPendingProposals/memory.MaxListLimit + 2 {
		res, err := h.svc.Proposals(r.Context(), rq.caller, service.ProposalsRequest{
			Project: ref.String(), State: memory.ProposalPending, Limit: memory.MaxListLimit, Cursor: cursor,
		})
		if err != nil {
			return nil, err
		}
		all = append(all, res.Proposals...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	slices.Reverse(all)
	return all, nil
}

// proposalRow adds what the pages show to a proposal of ref.
func (h *Handler) proposalRow(ref memory.ProjectRef, p service.ProposalView) (proposalRow, error) {
	pref, n, err := service.ParseProposalID(p.ID)
	if err != nil || pref != ref {
		// The service answered with another project's proposal: never
		// show it (invariant 7,
		// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
		return proposalRow{}, memory.Errorf(memory.CodeInternal, "proposal %q listed for project %s", p.ID, ref)
	}
	return proposalRow{ProposalView: p, N: n, Ref: ref, Age: age(h.now().Sub(p.CreatedAt))}, nil
}

// age says how long ago something happened, in the largest whole unit.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return ago(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return ago(int(d/time.Hour), "hour")
	}
	return ago(int(d/(24*time.Hour)), "day")
}

func ago(n int, unit string) string {
	return strconv.Itoa(n) + " " + plural(n, unit, unit+"s") + " ago"
}

// proposalPage is the data of one proposal's page and of its
// edit-then-approve form.
type proposalPage struct {
	P       proposalRow
	Reviews bool
	// HasCurrent: the entry exists (a tombstone counts, CurrentDeleted);
	// CurrentVersion is its latest version, the one approving must find.
	HasCurrent     bool
	CurrentVersion int
	CurrentDeleted bool
	// Expected is what the approve form sends as expected_version: the
	// entry's version the reviewer saw (0: the slug must still be new).
	Expected int
	// Stale: the entry moved on since the proposal's base; the page then
	// shows base, current and proposed side by side.
	Stale                 bool
	BaseText, CurrentText string
	// The diff of the proposed text against the current version, and the
	// title and tags when they change.
	Diff               diffTable
	TitleFrom, TitleTo string
	TagsFrom, TagsTo   string
	// Reason is a rejection reason typed before a refusal.
	Reason string
	// The edit-then-approve form: prefilled with the proposal; a title the
	// content's first line gives (DerivedTitle) is left empty.
	Title, Tags, Content string
	DerivedTitle         string
}

// proposalNumber reads the proposal's number from the URL and returns the
// key in view and the proposal's id.
func (h *Handler) proposalNumber(r *http.Request, rq *request) (memory.Key, string, error) {
	key, err := h.scoped(r, rq)
	if err != nil {
		return memory.Key{}, "", err
	}
	n, err := strconv.ParseInt(mux.Vars(r)["n"], 10, 64)
	if err != nil || n < 1 {
		return memory.Key{}, "", memory.Errorf(memory.CodeNotFound, "no proposal %q in %s", truncate(mux.Vars(r)["n"], 40), key.Project)
	}
	return key, service.ProposalID(key.Project, n), nil
}

// loadProposal loads a proposal with its base and current version and
// fills what its page and its edit form show.
func (h *Handler) loadProposal(r *http.Request, rq *request) (memory.Key, proposalPage, error) {
	key, id, err := h.proposalNumber(r, rq)
	if err != nil {
		return key, proposalPage{}, err
	}
	det, err := h.svc.Proposal(r.Context(), rq.caller, id)
	if err != nil {
		return key, proposalPage{}, err
	}
	row, err := h.proposalRow(key.Project, det.Proposal)
	if err != nil {
		return key, proposalPage{}, err
	}
	p := det.Proposal
	d := proposalPage{P: row, Reviews: key.Role.ReviewsAsPerson(), Title: p.Title, Tags: strings.Join(p.Tags, ", "), Content: p.Content,
		DerivedTitle: service.DerivedTitle(p.Content)}
	if d.Title == d.DerivedTitle {
		// As in the entry form: a title the first line gave stays derived,
		// so an edited first line gives the new title.
		d.Title = ""
	}
	proposed := memory.Version{Slug: p.Slug + "\x00proposal " + p.ID, Title: p.Title, Content: p.Content, Tags: p.Tags}
	if p.Deleted {
		proposed = memory.Version{Slug: proposed.Slug, Deleted: true}
	}
	var current memory.Version
	if c := det.Current; c != nil {
		d.HasCurrent, d.CurrentVersion, d.CurrentDeleted = true, c.Version, det.CurrentForgotten
		d.Expected, d.CurrentText = c.Version, c.Content
		current = asVersion(*c)
		if det.CurrentForgotten {
			// A tombstone diffs as empty text, as on the entry page.
			current = memory.Version{Slug: c.Slug, Version: c.Version, Deleted: true}
		}
	}
	d.TitleFrom, d.TitleTo = current.Title, proposed.Title
	d.TagsFrom, d.TagsTo = strings.Join(current.Tags, ", "), strings.Join(proposed.Tags, ", ")
	if b := det.Base; b != nil {
		d.BaseText = b.Content
	}
	d.Stale = p.State == memory.ProposalPending && d.CurrentVersion != p.BaseVersion
	if d.Diff, err = h.diffVersions(r, rq, key.Project, current, proposed); err != nil {
		return key, proposalPage{}, err
	}
	return key, d, nil
}

// proposal shows one proposal: its diff against the current version (and,
// when the entry moved on since its base, base, current and proposed side
// by side), and to an admin the buttons to decide.
func (h *Handler) proposal(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, d, err := h.loadProposal(r, rq)
	if err != nil {
		return err
	}
	h.render(w, r, rq, http.StatusOK, "proposal", projectView(key, "Proposal #"+strconv.FormatInt(d.P.N, 10), d))
	return nil
}

// approveForm shows the proposal's text in a form to edit before approving.
func (h *Handler) approveForm(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, d, err := h.loadProposal(r, rq)
	if err != nil {
		return err
	}
	if !d.Reviews {
		return memory.Errorf(memory.CodeForbidden, "key of %s has role %s and cannot approve proposals: only an admin key approves", key.Agent, key.Role)
	}
	if d.P.State != memory.ProposalPending {
		return memory.Errorf(memory.CodeConflict, "proposal #%d is %s already", d.P.N, d.P.State)
	}
	if d.P.Deleted {
		return memory.Errorf(memory.CodeInvalid, "proposal #%d forgets the entry: there is no text to edit; approve or reject it", d.P.N)
	}
	h.render(w, r, rq, http.StatusOK, "approve", projectView(key, "Edit, then approve #"+strconv.FormatInt(d.P.N, 10), d))
	return nil
}

// approve writes the proposal (or, from the edit form, the edited text) as
// the next version of its entry, conditional on the version the reviewer
// saw: a write since then is a conflict, not a silent overwrite.
func (h *Handler) approve(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, id, err := h.proposalNumber(r, rq)
	if err != nil {
		return err
	}
	expected, err := intParam(r, "expected_version", 0, 0)
	if err != nil {
		return err
	}
	req := service.ApproveRequest{ExpectedVersion: &expected}
	edited := r.PostFormValue("edited") == "1"
	if edited {
		req.Title = strings.TrimSpace(r.PostFormValue("title"))
		req.Content = normalizeNewlines(r.PostFormValue("content"))
		if req.Title == "" {
			// Empty means "from the first line", as in the entry form (the
			// service would keep the proposed title instead).
			req.Title = service.DerivedTitle(req.Content)
		}
		// Not nil even when empty: the reviewer may remove every tag (nil
		// would keep the proposed ones).
		req.Tags = append([]string{}, splitTags(r.PostFormValue("tags"))...)
	}
	res, err := h.svc.Approve(r.Context(), rq.caller, id, req)
	if err != nil {
		if memory.ErrorCode(err) == memory.CodeConflict {
			err = memory.Errorf(memory.CodeConflict, "%s. The entry changed since you opened the proposal: open it again to see the current version, then decide", message(err))
		}
		if edited && memory.ErrorCode(err) != memory.CodeInternal {
			// The typed text stays: the form again, with the reason.
			return h.refuseEdited(w, r, rq, err, req)
		}
		return err
	}
	return h.redirect(w, r, rq, reviewURL(key.Project), "Approved proposal "+id+": "+res.Slug+" is now at version "+strconv.Itoa(res.Version)+".")
}

// refuseEdited shows the edit-then-approve form again with what was typed
// and why approving it failed.
func (h *Handler) refuseEdited(w http.ResponseWriter, r *http.Request, rq *request, refusal error, req service.ApproveRequest) error {
	key, d, err := h.loadProposal(r, rq)
	if err != nil {
		return err
	}
	d.Title, d.Content, d.Tags = req.Title, req.Content, strings.Join(req.Tags, ", ")
	v := projectView(key, "Edit, then approve #"+strconv.FormatInt(d.P.N, 10), d)
	v.Error = message(refusal)
	h.render(w, r, rq, statusOf(refusal), "approve", v)
	return nil
}

// reject records the proposal as rejected with the reviewer's reason, which
// its proposer then reads on their proposals page.
func (h *Handler) reject(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, id, err := h.proposalNumber(r, rq)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(normalizeNewlines(r.PostFormValue("reason")))
	if _, err := h.svc.Reject(r.Context(), rq.caller, id, service.RejectRequest{Reason: reason}); err != nil {
		if memory.ErrorCode(err) != memory.CodeInvalid && memory.ErrorCode(err) != memory.CodeTooLarge {
			return err
		}
		// A missing or too long reason: the proposal again, with the
		// reason typed and what is wrong with it.
		key, d, lerr := h.loadProposal(r, rq)
		if lerr != nil {
			return lerr
		}
		d.Reason = reason
		v := projectView(key, "Proposal #"+strconv.FormatInt(d.P.N, 10), d)
		v.Error = message(err)
		h.render(w, r, rq, statusOf(err), "proposal", v)
		return nil
	}
	return h.redirect(w, r, rq, reviewURL(key.Project), "Rejected proposal "+id+"; its proposer sees the reason.")
}

// reviewHeader fills the project header's review link: for a key that
// decides proposals (an admin or a write key, memory.Role.ReviewsAsPerson)
// the number pending; for a propose key a link to its own proposals. A
// failed count is logged and leaves the count out; the page itself does not
// fail for it.
func (h *Handler) reviewHeader(r *http.Request, rq *request, v *view) {
	role := v.Key.Role
	v.Reviews, v.Proposes = role.ReviewsAsPerson(), role == memory.RolePropose
	if !v.Reviews {
		return
	}
	n, err := h.svc.PendingCount(r.Context(), rq.caller, *v.Project)
	if err != nil {
		h.log.Warn("web: count pending proposals", "project", v.Project.String(), "err", err)
		return
	}
	v.Pending = n
}

// saveReview sets whether the project's write keys propose instead of
// writing (the service checks the role and the value).
func (h *Handler) saveReview(w http.ResponseWriter, r *http.Request, rq *request) error {
	return h.saveSetting(w, r, rq, "review", h.svc.SetReview, func(v string) string {
		if v == memory.ReviewAgents {
			return "Review is on for agents: the writes of write keys wait in the review queue; admin keys and people in the web UI write directly."
		}
		return "Review is off: write keys write directly; keys with the role propose still propose."
	})
}
