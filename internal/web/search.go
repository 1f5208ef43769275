package web

import (
	"net/http"
	"strings"

	"munin/internal/memory"
)

// searchPage is the data of the search across the session's projects.
type searchPage struct {
	Query, Tag string
	// Projects are the session's projects, for the scope select.
	Projects []memory.ProjectRef
	Searched bool
	Hits     []memory.Hit // each names its project
}

// searchAll searches every project of the session as one ranked list (the
// service's Search with the zero project: the same recall agents use, not
// logged, as the search of one project). ?project=ws/p narrows it to that
// project's own search page.
func (h *Handler) searchAll(w http.ResponseWriter, r *http.Request, rq *request) error {
	d := searchPage{
		Query:    strings.TrimSpace(r.FormValue("q")),
		Tag:      strings.TrimSpace(r.FormValue("tag")),
		Projects: rq.caller.Projects(),
	}
	if p := r.FormValue("project"); p != "" {
		ref, err := memory.ParseProject("project", p)
		if err != nil {
			return err
		}
		// The project page decides whether the session reaches ref.
		http.Redirect(w, r, projectURL(ref)+queryString("q", d.Query, "tag", d.Tag), http.StatusSeeOther)
		return nil
	}
	if d.Query != "" {
		var tags []string
		if d.Tag != "" {
			tags = []string{d.Tag}
		}
		d.Searched = true
		var err error
		if d.Hits, err = h.svc.Search(r.Context(), rq.caller, memory.ProjectRef{}, memory.SearchQuery{Text: d.Query, Limit: pageSize, Tags: tags}); err != nil {
			return err
		}
	}
	title := "Search all my projects"
	if d.Searched {
		title = "Search: " + d.Query
	}
	h.render(w, r, rq, http.StatusOK, "search", view{Title: title, Data: d})
	return nil
}
