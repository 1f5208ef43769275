package api

import (
	"net/http"

	"munin/internal/memory"
	"munin/internal/service"
)

// changes: GET /changes?since=&limit= → {changes: [{project, slug, version,
// agent, kind, at, proposal}], next_cursor}: what changed in the caller's
// projects after the cursor since (empty: from the beginning, "now": no
// changes, the cursor of the present), at most limit (default 100, at most
// 1000). A since that is not a cursor of this server, or whose workspace
// file was replaced, is 400 invalid; so is a bad limit (docs/changes.md).
func (h *handler) changes(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "since", "limit")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	res, err := h.svc.Changes(r.Context(), c, service.ChangesRequest{Since: p.str("since"), Limit: limit})
	return reply(w, http.StatusOK, res, err)
}
