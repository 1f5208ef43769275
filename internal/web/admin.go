package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/memory"
)

// logPage is the data of the audit and search-log pages.
type logPage struct {
	Filter     memory.LogFilter
	SinceText  string
	UntilText  string
	Audit      []memory.AuditRow
	Searches   []memory.SearchRow
	Missed     []memory.MissedQuery
	MissedDays int
	// Older is the sealed cursor to page on from ("": this is the last page).
	Older string
}

// logRows is the page size of the logs.
const logRows = 100

// missedDays is how far back "what agents miss" looks.
const missedDays = 7

// logFilter reads the filter form shared by the audit and search logs.
func (h *Handler) logFilter(r *http.Request) (logPage, error) {
	d := logPage{
		Filter: memory.LogFilter{
			Agent:      strings.TrimSpace(r.FormValue("agent")),
			Slug:       strings.TrimSpace(r.FormValue("slug")),
			MissesOnly: r.FormValue("misses") == "1",
			Limit:      logRows,
		},
		SinceText: strings.TrimSpace(r.FormValue("since")),
		UntilText: strings.TrimSpace(r.FormValue("until")),
	}
	var err error
	if d.Filter.Since, err = parseTime("since", d.SinceText); err != nil {
		return d, err
	}
	if d.Filter.Until, err = parseTime("until", d.UntilText); err != nil {
		return d, err
	}
	d.Filter.BeforeID, err = h.cursors.open(strings.TrimSpace(r.FormValue("before")))
	return d, err
}

// parseTime reads a date or a date and time (as an HTML date or
// datetime-local input sends them), in UTC; empty is the zero time.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, memory.Errorf(memory.CodeInvalid, "%s must be a date like 2026-11-30 or 2026-11-30T14:05 (UTC), got %q", field, truncate(s, 40))
}

// logView renders a log page: scope, read the filter form, let fill load
// the rows (it returns the id to page on from), render.
func (h *Handler) logView(w http.ResponseWriter, r *http.Request, rq *request, name, title string,
	fill func(key memory.Key, d *logPage) (older int64, err error)) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	d, err := h.logFilter(r)
	if err != nil {
		return err
	}
	older, err := fill(key, &d)
	if err != nil {
		return err
	}
	d.Older = h.cursors.seal(older)
	h.render(w, r, rq, http.StatusOK, name, projectView(key, title, d))
	return nil
}

// audit shows who wrote what, filtered by agent, slug and time.
func (h *Handler) audit(w http.ResponseWriter, r *http.Request, rq *request) error {
	return h.logView(w, r, rq, "audit", "Audit log", func(key memory.Key, d *logPage) (int64, error) {
		var err error
		// "misses" filters the search log; writes have no hits, and the
		// audit page ignores it as the search log ignores "slug".
		d.Filter.MissesOnly = false
		if d.Audit, err = h.svc.AuditLog(r.Context(), rq.caller, key.Project, d.Filter); err != nil || len(d.Audit) < logRows {
			return 0, err
		}
		return d.Audit[len(d.Audit)-1].ID, nil
	})
}

// searches shows what was searched, with hit counts and durations; searches
// that found nothing stand out, and the most asked of them are listed first:
// that is what the agents miss.
func (h *Handler) searches(w http.ResponseWriter, r *http.Request, rq *request) error {
	return h.logView(w, r, rq, "searches", "Search log", func(key memory.Key, d *logPage) (int64, error) {
		var err error
		d.Filter.Slug = ""
		d.MissedDays = missedDays
		// SearchLog first: it flushes buffered rows, which Missed then counts.
		if d.Searches, err = h.svc.SearchLog(r.Context(), rq.caller, key.Project, d.Filter); err != nil {
			return 0, err
		}
		since := time.Now().Add(-missedDays * 24 * time.Hour)
		if d.Missed, err = h.svc.MissedQueries(r.Context(), rq.caller, key.Project, since, 20); err != nil || len(d.Searches) < logRows {
			return 0, err
		}
		return d.Searches[len(d.Searches)-1].ID, nil
	})
}

// settingsPage is the data of a project's settings.
type settingsPage struct {
	Writes, Budget int
	// MiB and BudgetMiB are this hour's content and the hourly limit, in MiB.
	MiB, BudgetMiB float64
	// Review is the project's review setting (memory.ReviewOff or
	// memory.ReviewAgents).
	Review string
	// Similar is the project's similar setting (memory.SimilarOn or
	// memory.SimilarOff).
	Similar string
}

// maxBudgetMiB bounds the byte budget the settings form takes (1 TiB), so
// the conversion to bytes cannot overflow.
const maxBudgetMiB = 1 << 20

// settings shows the project's write budget, review and similar settings to its
// admin (or a server admin), who may change them; the service refuses
// every other key.
func (h *Handler) settings(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	p, err := h.svc.Settings(r.Context(), rq.caller, key.Project)
	if err != nil {
		return err
	}
	review, err := h.svc.ProjectReview(r.Context(), rq.caller, key.Project)
	if err != nil {
		return err
	}
	similar, err := h.svc.ProjectSimilar(r.Context(), rq.caller, key.Project)
	if err != nil {
		return err
	}
	h.render(w, r, rq, http.StatusOK, "settings", projectView(key, "Settings", settingsPage{Writes: p.Writes, Budget: p.Budget,
		MiB: float64(p.Bytes) / (1 << 20), BudgetMiB: float64(p.BytesBudget) / (1 << 20), Review: review, Similar: similar}))
	return nil
}

// saveSettings sets the project's write budget (the service checks the role).
func (h *Handler) saveSettings(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	n, err := intParam(r, "writes_per_hour", -1, 0)
	if err != nil {
		return err
	}
	if n < 0 {
		return memory.Errorf(memory.CodeInvalid, "writes_per_hour is missing")
	}
	// The byte budget is optional in the form: left out, it keeps its value.
	mib, err := intParam(r, "mib_per_hour", -1, 0)
	if err != nil {
		return err
	}
	if mib > maxBudgetMiB {
		return memory.Errorf(memory.CodeInvalid, "mib_per_hour must be at most %d, got %d", maxBudgetMiB, mib)
	}
	var bytes *int
	if mib >= 0 {
		bytes = new(mib << 20)
	}
	if err := h.svc.SetWriteBudgets(r.Context(), rq.caller, key.Project.String(), &n, bytes); err != nil {
		return err
	}
	msg := "Write budget set to " + strconv.Itoa(n) + " writes per hour."
	if bytes != nil {
		msg = "Write budget set to " + strconv.Itoa(n) + " writes and " + strconv.Itoa(mib) + " MiB per hour."
	}
	if n == 0 && mib <= 0 {
		msg = "Write budget reset to the server default."
	}
	return h.redirect(w, r, rq, projectURL(key.Project)+"/settings", msg)
}

// keysPage is the data of the keys page.
type keysPage struct {
	Keys []memory.Key
	// Admins are the session's admin keys (a project admin's view): the
	// projects whose keys are listed and that a new key may be for.
	Admins []memory.Key
	// Token is a key just created, shown this once.
	Token   string
	Created *memory.Key
	// Form holds what was typed when creating failed.
	Workspace, Project, Agent, Role string
}

// keys lists the keys the session administers, with their last use: those
// of every project it holds an admin key for, or every key for a
// server-admin key (the service decides which).
func (h *Handler) keys(w http.ResponseWriter, r *http.Request, rq *request) error {
	d := keysPage{Role: string(memory.RoleWrite)}
	if admins := rq.caller.Administering(); len(admins) > 0 && !rq.caller.ServerAdmin() {
		d.Workspace, d.Project = admins[0].Project.Workspace, admins[0].Project.Project
	}
	return h.renderKeys(w, r, rq, http.StatusOK, d, "")
}

func (h *Handler) renderKeys(w http.ResponseWriter, r *http.Request, rq *request, status int, d keysPage, errMsg string) error {
	keys, err := h.svc.ProjectKeys(r.Context(), rq.caller)
	if err != nil {
		return err
	}
	d.Keys = keys
	v := view{Title: "Keys", Error: errMsg, Data: d}
	if !rq.caller.ServerAdmin() {
		d.Admins = rq.caller.Administering()
		v.Data = d
		if len(d.Admins) == 1 {
			// The keys page of one project's admin belongs to that
			// project's navigation.
			v = projectView(d.Admins[0], "Keys", d)
			v.Error = errMsg
		}
	}
	h.render(w, r, rq, status, "keys", v)
	return nil
}

// createKey creates a key and shows its token once, on this response only
// (it is in no URL and no redirect, and the page is not cached).
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, rq *request) error {
	d := keysPage{
		Workspace: strings.TrimSpace(r.PostFormValue("workspace")),
		Project:   strings.TrimSpace(r.PostFormValue("project")),
		Agent:     strings.TrimSpace(r.PostFormValue("agent")),
		Role:      r.PostFormValue("role"),
	}
	if t := r.PostFormValue("target"); t != "" {
		// The project select of an admin of several projects.
		ref, err := memory.ParseProject("project", t)
		if err != nil {
			return h.renderKeys(w, r, rq, statusOf(err), d, message(err))
		}
		d.Workspace, d.Project = ref.Workspace, ref.Project
	}
	ref := memory.ProjectRef{Workspace: d.Workspace, Project: d.Project}
	token, k, err := h.svc.CreateProjectKey(r.Context(), rq.caller, ref, d.Agent, memory.Role(d.Role))
	if err != nil {
		if c := memory.ErrorCode(err); c != memory.CodeInvalid && c != memory.CodeTooLarge && c != memory.CodeBudgetExhausted {
			return err
		}
		// The key limits answer on the form, with Retry-After as REST would.
		setRetryAfter(w, err)
		return h.renderKeys(w, r, rq, statusOf(err), d, message(err))
	}
	d.Token, d.Created = token, &k
	return h.renderKeys(w, r, rq, http.StatusOK, d, "")
}

// revokeKey revokes a key the session administers; it leaves its sessions
// with their next request.
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		return memory.Errorf(memory.CodeInvalid, "key id must be a number")
	}
	if err := h.svc.RevokeProjectKey(r.Context(), rq.caller, id); err != nil {
		return err
	}
	return h.redirect(w, r, rq, "/keys", "Revoked key "+strconv.FormatInt(id, 10)+"; it works nowhere any more, and leaves every session that held it.")
}
