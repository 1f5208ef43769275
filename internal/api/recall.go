package api

import (
	"net/http"

	"munin/internal/memory"
)

// recallRequest is the body of POST /recall; the names are the MCP tool's.
type recallRequest struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Tags  []string `json:"tags"`
}

type recallResponse struct {
	Hits []memory.Hit `json:"hits"`
}

// budgetRequest is the body of PUT /project/budget. Pointers, so that a
// missing field (left as it is) is told apart from 0 ("server default").
type budgetRequest struct {
	WritesPerHour *int `json:"writes_per_hour"`
	BytesPerHour  *int `json:"bytes_per_hour"`
}

// recallGet: GET /recall?q=&limit=&tags=a,b → {hits}.
func (h *handler) recallGet(w http.ResponseWriter, r *http.Request, key memory.Key) {
	p, err := readParams(r, "q", "limit", "tags")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	h.recall(w, r, key, memory.SearchQuery{Text: p.str("q"), Limit: limit, Tags: p.list("tags")})
}

// recallPost: POST /recall {query, limit, tags} → {hits}; for queries that
// should not end up in URLs and access logs.
func (h *handler) recallPost(w http.ResponseWriter, r *http.Request, key memory.Key) {
	var in recallRequest
	if !decodeJSON(w, r, &in) {
		return
	}
	h.recall(w, r, key, memory.SearchQuery{Text: in.Query, Limit: in.Limit, Tags: nonNil(in.Tags)})
}

func (h *handler) recall(w http.ResponseWriter, r *http.Request, key memory.Key, q memory.SearchQuery) {
	hits, err := h.svc.Recall(r.Context(), key, q)
	if err != nil {
		WriteError(w, err)
		return
	}
	hits = nonNil(hits)
	for i := range hits {
		hits[i].Tags = nonNil(hits[i].Tags)
	}
	writeJSON(w, http.StatusOK, recallResponse{Hits: hits})
}

// setBudget: PUT /project/budget {writes_per_hour, bytes_per_hour} → 204;
// admin keys of the project only. A field left out keeps its value.
func (h *handler) setBudget(w http.ResponseWriter, r *http.Request, key memory.Key) {
	var in budgetRequest
	if !decodeJSON(w, r, &in) {
		return
	}
	if err := h.svc.SetWriteBudgets(r.Context(), key, in.WritesPerHour, in.BytesPerHour); err != nil {
		WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
