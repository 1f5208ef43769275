package api

import (
	"net/http"

	"munin/internal/memory"
	"munin/internal/service"
)

// budgetRequest is the body of PUT /project/budget. Pointers, so that a
// missing field (left as it is) is told apart from 0 ("server default").
type budgetRequest struct {
	Project       string `json:"project"`
	WritesPerHour *int   `json:"writes_per_hour"`
	BytesPerHour  *int   `json:"bytes_per_hour"`
}

// recallGet: GET /recall?q=&project=&limit=&tags=a,b → {hits}.
func (h *handler) recallGet(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "q", "project", "limit", "tags")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	return h.recall(w, r, c, service.RecallRequest{Project: p.str("project"), Query: p.str("q"), Limit: limit, Tags: p.list("tags")})
}

// recallPost: POST /recall {query, project, limit, tags} → {hits}; for queries that
// should not end up in URLs and access logs.
func (h *handler) recallPost(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	var in service.RecallRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	return h.recall(w, r, c, in)
}

func (h *handler) recall(w http.ResponseWriter, r *http.Request, c memory.Caller, q service.RecallRequest) error {
	res, err := h.svc.Recall(r.Context(), c, q)
	return reply(w, http.StatusOK, res, err)
}

// setBudget: PUT /project/budget {project, writes_per_hour, bytes_per_hour}
// → 204; admin keys of the project only. A field left out keeps its value.
func (h *handler) setBudget(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	var in budgetRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	if err := h.svc.SetWriteBudgets(r.Context(), c, in.Project, in.WritesPerHour, in.BytesPerHour); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
