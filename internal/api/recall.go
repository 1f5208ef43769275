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
func (h *handler) recallGet(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	p, err := readParams(r, "q", "project", "limit", "tags")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	h.recall(w, r, c, service.RecallRequest{Project: p.str("project"), Query: p.str("q"), Limit: limit, Tags: p.list("tags")})
}

// recallPost: POST /recall {query, project, limit, tags} → {hits}; for queries that
// should not end up in URLs and access logs.
func (h *handler) recallPost(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	var in service.RecallRequest
	if !decodeJSON(w, r, &in) {
		return
	}
	h.recall(w, r, c, in)
}

func (h *handler) recall(w http.ResponseWriter, r *http.Request, c memory.Caller, q service.RecallRequest) {
	res, err := h.svc.Recall(r.Context(), c, q)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// setBudget: PUT /project/budget {project, writes_per_hour, bytes_per_hour}
// → 204; admin keys of the project only. A field left out keeps its value.
func (h *handler) setBudget(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	var in budgetRequest
	if !decodeJSON(w, r, &in) {
		return
	}
	if err := h.svc.SetWriteBudgets(r.Context(), c, in.Project, in.WritesPerHour, in.BytesPerHour); err != nil {
		WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
