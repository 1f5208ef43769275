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

// recallGet: GET /recall?q=&project=&limit=&tags=a,b&include_stale=true → {hits}.
func (h *handler) recallGet(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "q", "project", "limit", "tags", "include_stale")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	stale, err := boolParam(p, "include_stale")
	if err != nil {
		return err
	}
	return h.recall(w, r, c, service.RecallRequest{Project: p.str("project"), Query: p.str("q"), Limit: limit, Tags: p.list("tags"), IncludeStale: stale})
}

// boolParam reads a query parameter that is true or false ("" is false).
func boolParam(p params, name string) (bool, error) {
	switch p.str(name) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, memory.Errorf(memory.CodeInvalid, "query parameter %s must be true or false, got %q", name, p.str(name))
}

// recallPost: POST /recall {query, project, limit, tags, include_stale} → {hits}; for queries that
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
