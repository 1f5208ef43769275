package web

import (
	"encoding/json"
	"fmt"
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
	// Invalid: the filter form could not be read; the page shows the
	// error and the form, and no rows.
	Invalid bool
	// TimeHint names the date forms the filters take.
	TimeHint string
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
		TimeHint:  timeFormatHint,
	}
	since, _, err := parseTime("since", d.SinceText)
	if err != nil {
		return d, err
	}
	until, step, err := parseTime("until", d.UntilText)
	if err != nil {
		return d, err
	}
	// Until is inclusive at the precision typed: "until 2026-12-04" keeps
	// that whole day, "until …T10:30" that minute. The store's bound is
	// exclusive (memory.LogFilter), so it gets the end of that step.
	d.Filter.Since, d.Filter.Until = since, until.Add(step)
	d.Filter.BeforeID, err = h.cursors.open(strings.TrimSpace(r.FormValue("before")))
	return d, err
}

// timeLayouts are the ISO 8601 forms the log filters take (UTC), each with
// the span it names: a day, a minute, a second. A "T" or a space may
// separate date and time; RFC 3339 with a zone is taken to the second.
var timeLayouts = []struct {
	layout string
	step   time.Duration
}{
	{"2006-01-02", 24 * time.Hour},
	{"2006-01-02T15:04", time.Minute},
	{"2006-01-02 15:04", time.Minute},
	{"2006-01-02T15:04:05", time.Second},
	{"2006-01-02 15:04:05", time.Second},
	{time.RFC3339, time.Second},
}

// timeFormatHint names the forms parseTime takes, for the form and its errors.
const timeFormatHint = "2026-12-04, 2026-12-04T10:30 or 2026-12-04T10:30:05 (UTC)"

// parseTime reads an ISO 8601 date, or date and time, in UTC; empty is the
// zero time. step is the span the text names (a whole day for a date), so
// an "until" can include it.
func parseTime(field, s string) (t time.Time, step time.Duration, err error) {
	if s == "" {
		return time.Time{}, 0, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l.layout, s); err == nil {
			return t.UTC(), l.step, nil
		}
	}
	return time.Time{}, 0, memory.Errorf(memory.CodeInvalid, "%s must be an ISO date like %s, got %q", field, timeFormatHint, truncate(s, 40))
}

// logView renders a log page: scope, read the filter form, let fill load
// the rows (it returns the id to page on from), render. A filter that does
// not read (a bad date, since after until) answers 400 on the page itself,
// with the form as typed to correct and no rows.
func (h *Handler) logView(w http.ResponseWriter, r *http.Request, rq *request, name, title string,
	fill func(key memory.Key, d *logPage) (older int64, err error)) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	d, err := h.logFilter(r)
	var older int64
	if err == nil {
		older, err = fill(key, &d)
	}
	if memory.ErrorCode(err) == memory.CodeInvalid {
		d.Invalid, d.Audit, d.Searches, d.Missed = true, nil, nil, nil
		v := projectView(key, title, d)
		v.Error = message(err)
		h.render(w, r, rq, statusOf(err), name, v)
		return nil
	}
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
	// Token is a key just created, shown this once, with a client
	// configuration that holds it (Setup).
	Token   string
	Created *memory.Key
	Setup   clientSetup
	// Session marks the keys the session signed in with: the page says so
	// and offers no revoke button for them (revoking one ends this session).
	Session map[int64]bool
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
	d.Session = map[int64]bool{}
	for _, k := range rq.caller.Keys() {
		d.Session[k.ID] = true
	}
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
	if d.Setup, err = newClientSetup(h.baseURL(r), token); err != nil {
		return err
	}
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

// clientSetup is what a person pastes into an MCP client to use a new key
// (docs/mcp-tools.md#connecting): the Claude Code command line, and the
// mcpServers block that Cursor, Claude Desktop and others read.
type clientSetup struct {
	URL     string // the MCP endpoint
	Command string
	JSON    string
}

// newClientSetup builds the configuration of key for the server at base.
func newClientSetup(base, key string) (clientSetup, error) {
	u := base + "/mcp"
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	block := map[string]map[string]server{"mcpServers": {"munin": {Type: "http", URL: u, Headers: map[string]string{"Authorization": "Bearer " + key}}}}
	b, err := json.MarshalIndent(block, "", "  ")
	if err != nil {
		return clientSetup{}, fmt.Errorf("client configuration: %w", err)
	}
	return clientSetup{
		URL:     u,
		Command: "claude mcp add --transport http munin " + u + ` --header "Authorization: Bearer ` + key + `"`,
		JSON:    string(b),
	}, nil
}

// baseURL is the server's address as the browser reached it: the public
// URL when one is configured (--public-url, behind a proxy), else the
// scheme and the Host the request came to (the front door checked it).
func (h *Handler) baseURL(r *http.Request) string {
	if h.issuer != "" {
		return strings.TrimSuffix(h.issuer, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
