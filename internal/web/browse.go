package web

import (
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// pageSize is the number of entries on one page of a project, and the most
// search hits shown: the most one recall returns.
const pageSize = memory.MaxRecallLimit

// scoped returns the session's key acting in the project named by the URL
// (service.Scope decides: the session's key for that project, a project it
// holds no key for answering as a missing one; a server-admin key in any).
func (h *Handler) scoped(r *http.Request, rq *request) (memory.Key, error) {
	vars := mux.Vars(r)
	return h.svc.Scope(r.Context(), rq.caller, memory.ProjectRef{Workspace: vars["ws"], Project: vars["p"]})
}

// projectView is the frame of every project page: the key for the project
// decides the role shown and which tabs and buttons appear.
func projectView(key memory.Key, title string, data any) view {
	ref := key.Project
	return view{Title: title, Key: &key, Project: &ref, CanWrite: key.Role.CanWrite(), Data: data}
}

// intParam reads an optional integer query or form value; empty is def.
func intParam(r *http.Request, name string, def, min int) (int, error) {
	s := strings.TrimSpace(r.FormValue(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min {
		return 0, memory.Errorf(memory.CodeInvalid, "%s must be a whole number of at least %d, got %q", name, min, truncate(s, 40))
	}
	return n, nil
}

// truncate bounds a client-supplied value quoted in a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// projectPage is the data of a project's entry list or search results.
type projectPage struct {
	Summary service.ProjectSummary
	Query   string
	Tag     string
	Sort    string
	// Stale, when "1", makes the search also find expired and superseded
	// entries (ranked below live ones, each marked with its state).
	Stale string
	// Search mode.
	Searched bool
	Hits     []hitRow
	// Live is the feed's cursor when the page was made: the page's live
	// stream (static/app.js) announces the changes after it.
	Live string
	// List mode. TagOptions are the tags the tag filter offers: those of
	// the entries on this page, and the one filtered by.
	Entries     []entryRow
	TagOptions  []string
	Total       int
	Page, Pages int
}

// entryRow is one entry of a project's list. Expired: its valid_until has
// passed (a superseded entry names its successor in SupersededBy); the list
// shows both marked, as recall leaves them out.
type entryRow struct {
	memory.EntrySummary
	Expired bool
}

// project shows a project's entries (sorted, filtered by tag, paged) or,
// with ?q=, the recall results for the query — the same recall agents use,
// but not logged: a GET that any page can make a browser send must not
// write a row as the person's act (the search log holds agents' recalls).
func (h *Handler) project(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	d := projectPage{
		Query: strings.TrimSpace(r.FormValue("q")),
		Tag:   strings.TrimSpace(r.FormValue("tag")),
		Sort:  r.FormValue("sort"),
		Stale: map[bool]string{true: "1"}[r.FormValue("stale") == "1"],
	}
	if d.Sort == "" {
		d.Sort = memory.OrderUpdated
	}
	if r.FormValue("scope") == "all" {
		// "All my projects" on this project's search form.
		http.Redirect(w, r, "/search"+queryString("q", d.Query, "tag", d.Tag, "stale", d.Stale), http.StatusSeeOther)
		return nil
	}
	if d.Summary, err = h.svc.Project(r.Context(), rq.caller, key.Project); err != nil {
		return err
	}
	d.Live = h.liveCursor(r, key)
	var tags []string
	if d.Tag != "" {
		tags = []string{d.Tag}
	}
	if d.Query != "" {
		// At: what has expired is judged at this clock (time.Now outside
		// tests, as the service's); Search takes the time from its caller.
		d.Searched = true
		hits, err := h.svc.Search(r.Context(), rq.caller, key.Project, memory.SearchQuery{Text: d.Query, Limit: pageSize, Tags: tags, IncludeStale: d.Stale == "1", At: h.now().UTC()})
		if err != nil {
			return err
		}
		d.Hits = hitRows(hits)
		h.render(w, r, rq, http.StatusOK, "project", projectView(key, "Search: "+d.Query, d))
		return nil
	}
	if d.Page, err = intParam(r, "page", 1, 1); err != nil {
		return err
	}
	if maxPage := math.MaxInt / pageSize; d.Page > maxPage { // the offset must not wrap
		return memory.Errorf(memory.CodeInvalid, "page must be at most %d, got %d", maxPage, d.Page)
	}
	entries, total, err := h.svc.Entries(r.Context(), rq.caller, key.Project, service.EntryQuery{
		Tag: d.Tag, Order: d.Sort, Offset: (d.Page - 1) * pageSize, Limit: pageSize,
	})
	if err != nil {
		return err
	}
	d.Total = total
	now := h.now()
	for _, e := range entries {
		d.Entries = append(d.Entries, entryRow{EntrySummary: e, Expired: e.ValidUntil != nil && !now.Before(*e.ValidUntil)})
	}
	d.Pages = max(1, (d.Total+pageSize-1)/pageSize)
	d.TagOptions = tagOptions(entries, d.Tag)
	h.render(w, r, rq, http.StatusOK, "project", projectView(key, key.Project.String(), d))
	return nil
}

// tagOptions are the distinct tags of entries plus the current filter, sorted.
func tagOptions(entries []memory.EntrySummary, current string) []string {
	var out []string
	if current != "" {
		out = append(out, current)
	}
	for _, e := range entries {
		out = append(out, e.Tags...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// entryPage is the data of an entry's page.
type entryPage struct {
	Slug    string
	History []memory.VersionInfo
	Latest  memory.VersionInfo // the newest version, possibly a tombstone
	// Shown is the version on display (nil: the entry is forgotten and no
	// version was asked for); HTML is its rendered content, and Plain, when
	// set, why it is shown as plain text instead of Markdown.
	Shown    *memory.Version
	HTML     template.HTML
	Plain    string
	IsLatest bool
	// Expired and SupersededBy mark a latest version that no longer holds
	// (past its valid_until, or replaced by another entry): recall leaves
	// it out unless asked for stale entries, and the page says so.
	Expired      bool
	ValidUntil   *time.Time
	SupersededBy string
	// Diff mode: Diffing is set; Diff is the diff, perhaps cut (bounded).
	Diffing  bool
	Diff     diffTable
	From, To memory.Version
}

// entry shows one version of an entry (the latest live one by default,
// ?version=N for another), its history, and with ?diff=A..B (or ?from=A&to=B)
// the line diff between two versions.
func (h *Handler) entry(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	slug := mux.Vars(r)["slug"]
	res, err := h.svc.History(r.Context(), rq.caller, service.HistoryRequest{Project: key.Project.String(), Slug: slug, Limit: memory.MaxHistoryLimit})
	if err != nil {
		return err
	}
	history := res.Versions
	d := entryPage{Slug: slug, History: history, Latest: history[0]}
	from, to, err := diffParams(r)
	if err != nil {
		return err
	}
	if from > 0 {
		if d.From, err = h.versionOrTombstone(r, rq, key, slug, from, history); err != nil {
			return err
		}
		if d.To, err = h.versionOrTombstone(r, rq, key, slug, to, history); err != nil {
			return err
		}
		d.Diffing = true
		if d.Diff, err = h.diffVersions(r, rq, key.Project, d.From, d.To); err != nil {
			return err
		}
		title := "Diff of " + slug + " v" + strconv.Itoa(from) + "..v" + strconv.Itoa(to)
		h.render(w, r, rq, http.StatusOK, "entry", projectView(key, title, d))
		return nil
	}
	version, err := intParam(r, "version", 0, 1)
	if err != nil {
		return err
	}
	if version != 0 || !d.Latest.Deleted {
		got, err := h.svc.Get(r.Context(), rq.caller, service.GetRequest{Project: key.Project.String(), Slug: slug, Version: version})
		if err != nil {
			return err
		}
		shown := asVersion(got)
		d.Shown = &shown
		d.IsLatest = got.Version == d.Latest.Version
		d.Expired, d.ValidUntil, d.SupersededBy = got.Expired, got.ValidUntil, got.SupersededBy
		out, err := h.renderVersion(r, rq, key.Project, shown)
		if err != nil {
			return err
		}
		d.HTML, d.Plain = out.HTML, out.Plain
	}
	h.render(w, r, rq, http.StatusOK, "entry", projectView(key, slug, d))
	return nil
}

// versionOrTombstone returns version n of slug; a tombstone counts as an
// empty version, so a diff can show what forget removed.
func (h *Handler) versionOrTombstone(r *http.Request, rq *request, key memory.Key, slug string, n int, history []memory.VersionInfo) (memory.Version, error) {
	for _, vi := range history {
		if vi.Version == n && vi.Deleted {
			return memory.Version{Slug: slug, Version: n, Agent: vi.Agent, CreatedAt: vi.CreatedAt, Deleted: true}, nil
		}
	}
	got, err := h.svc.Get(r.Context(), rq.caller, service.GetRequest{Project: key.Project.String(), Slug: slug, Version: n})
	return asVersion(got), err
}

// asVersion is an entry as the pages show versions.
func asVersion(e service.Entry) memory.Version {
	return memory.Version{Slug: e.Slug, Version: e.Version, Title: e.Title, Content: e.Content, Tags: e.Tags, Agent: e.Agent, CreatedAt: e.CreatedAt}
}

// diffParams reads ?diff=A..B or ?from=A&to=B; (0, 0) means no diff.
func diffParams(r *http.Request) (from, to int, err error) {
	if s := r.FormValue("diff"); s != "" {
		a, b, ok := strings.Cut(s, "..")
		from, err1 := strconv.Atoi(a)
		to, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || from < 1 || to < 1 {
			return 0, 0, memory.Errorf(memory.CodeInvalid, "diff must look like 1..3 (two version numbers), got %q", truncate(s, 40))
		}
		return from, to, nil
	}
	if r.FormValue("from") == "" && r.FormValue("to") == "" {
		return 0, 0, nil
	}
	if from, err = intParam(r, "from", 0, 1); err != nil {
		return 0, 0, err
	}
	if to, err = intParam(r, "to", 0, 1); err != nil {
		return 0, 0, err
	}
	if from == 0 || to == 0 {
		return 0, 0, memory.Errorf(memory.CodeInvalid, "a diff needs both from and to")
	}
	return from, to, nil
}
