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
	// Stale, when "1", also finds expired and superseded entries.
	Stale    string
	Searched bool
	Hits     []hitRow // each names its project
}

// hitRow is a search hit as the pages show it. How says in a few words how
// it matched when that was not by the query's words as written (the
// search's Explanation, or the way it was found): "" for a plain hit.
type hitRow struct {
	memory.Hit
	How string
}

// hitRows are hits as the pages show them.
func hitRows(hits []memory.Hit) []hitRow {
	out := make([]hitRow, len(hits))
	for i, h := range hits {
		out[i] = hitRow{Hit: h, How: howMatched(h)}
	}
	return out
}

// howMatched is h's explanation as a line under the hit. The search words
// it as a phrase ("matched 'Datenbank' for 'Datenbnak'", "parts of
// 'Fehlerbericht'", "by meaning"); a bare "by …" reads as "found by …".
// Without one, a hit found by meaning still says so.
func howMatched(h memory.Hit) string {
	switch e := h.Explanation; {
	case strings.HasPrefix(e, "by "):
		return "found " + e
	case e != "":
		return e
	case h.Match == memory.MatchMeaning:
		return "found by meaning"
	case h.Match == memory.MatchBoth:
		return "found by words and meaning"
	}
	return ""
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
		Stale:    map[bool]string{true: "1"}[r.FormValue("stale") == "1"],
	}
	if p := r.FormValue("project"); p != "" {
		ref, err := memory.ParseProject("project", p)
		if err != nil {
			return err
		}
		// The project page decides whether the session reaches ref.
		http.Redirect(w, r, projectURL(ref)+queryString("q", d.Query, "tag", d.Tag, "stale", d.Stale), http.StatusSeeOther)
		return nil
	}
	if d.Query != "" {
		var tags []string
		if d.Tag != "" {
			tags = []string{d.Tag}
		}
		d.Searched = true
		hits, err := h.svc.Search(r.Context(), rq.caller, memory.ProjectRef{}, memory.SearchQuery{Text: d.Query, Limit: pageSize, Tags: tags, IncludeStale: d.Stale == "1", At: h.now().UTC()})
		if err != nil {
			return err
		}
		d.Hits = hitRows(hits)
	}
	title := "Search all my projects"
	if d.Searched {
		title = "Search: " + d.Query
	}
	h.render(w, r, rq, http.StatusOK, "search", view{Title: title, Data: d})
	return nil
}
