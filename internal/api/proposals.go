package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// The review routes: a proposal's id names its project, so the routes take
// no project besides the listing's; the service decides who sees and
// decides what.

// proposals: GET /proposals?project=&state=&limit=&cursor= → {proposals, next_cursor}.
func (h *handler) proposals(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "project", "state", "limit", "cursor")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	res, err := h.svc.Proposals(r.Context(), c, service.ProposalsRequest{
		Project: p.str("project"), State: p.str("state"), Limit: limit, Cursor: p.str("cursor"),
	})
	return reply(w, http.StatusOK, res, err)
}

// proposal: GET /proposals/{id} → the proposal with its base and the current version.
func (h *handler) proposal(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	if _, err := readParams(r); err != nil {
		return err
	}
	res, err := h.svc.Proposal(r.Context(), c, mux.Vars(r)["id"])
	return reply(w, http.StatusOK, res, err)
}

// approve: POST /proposals/{id}/approve with an optional ApproveRequest body → the version written.
func (h *handler) approve(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	var in service.ApproveRequest
	if r.ContentLength == 0 {
		// No body: approve as proposed.
		if _, err := readParams(r); err != nil {
			return err
		}
	} else if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := h.svc.Approve(r.Context(), c, mux.Vars(r)["id"], in)
	return reply(w, http.StatusOK, res, err)
}

// reject: POST /proposals/{id}/reject with {reason} → the proposal, rejected.
func (h *handler) reject(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	var in service.RejectRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := h.svc.Reject(r.Context(), c, mux.Vars(r)["id"], in)
	return reply(w, http.StatusOK, res, err)
}

// reviewRequest is the body of PUT /project/review.
type reviewRequest struct {
	Project string `json:"project"`
	Review  string `json:"review"`
}

// setReview: PUT /project/review {project, review} → 204.
func (h *handler) setReview(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	return putSetting(w, r, func(in reviewRequest) error { return h.svc.SetReviewOf(r.Context(), c, in.Project, in.Review) })
}
