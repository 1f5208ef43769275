package web

import (
	"math"
	"net/http"

	"munin/internal/memory"
	"munin/internal/service"
)

// forgottenPage is the data of a project's forgotten entries: each row is
// an entry whose latest version is a tombstone, with the title and tags it
// had before (memory.EntrySummary: Version is the tombstone's, Agent who
// forgot it, UpdatedAt when).
type forgottenPage struct {
	Entries     []memory.EntrySummary
	Total       int
	Page, Pages int
}

// forgotten lists a project's forgotten entries, most recently forgotten
// first, paged like the entry list. Forget never destroys history, so each
// can be restored: the page's Restore writes the version before the
// tombstone again (the restore route, which the service decides on).
func (h *Handler) forgotten(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	var d forgottenPage
	if d.Page, err = pageParam(r); err != nil {
		return err
	}
	entries, total, err := h.svc.Entries(r.Context(), rq.caller, key.Project, service.EntryQuery{
		Forgotten: true, Order: memory.OrderUpdated, Offset: (d.Page - 1) * pageSize, Limit: pageSize,
	})
	if err != nil {
		return err
	}
	d.Entries, d.Total = entries, total
	d.Pages = max(1, (total+pageSize-1)/pageSize)
	h.render(w, r, rq, http.StatusOK, "forgotten", projectView(key, "Forgotten in "+key.Project.String(), d))
	return nil
}

// pageParam reads ?page= (1 when absent), refusing a page whose offset
// would wrap.
func pageParam(r *http.Request) (int, error) {
	page, err := intParam(r, "page", 1, 1)
	if err != nil {
		return 0, err
	}
	if maxPage := math.MaxInt / pageSize; page > maxPage {
		return 0, memory.Errorf(memory.CodeInvalid, "page must be at most %d, got %d", maxPage, page)
	}
	return page, nil
}
