package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// editPage is the data of the create/edit form.
type editPage struct {
	IsNew bool
	Slug  string
	Title string
	// DerivedTitle is the title the content's first line gives; shown as
	// the title field's placeholder.
	DerivedTitle string
	Tags         string
	Content      string
	// Expected is the version the form was opened on (0: the slug must be
	// new); saving is conditional on it, so a concurrent write is a conflict,
	// not a silent overwrite. After a conflict it is the version the person
	// was shown as theirs, so saving the merge succeeds unless someone
	// wrote again meanwhile.
	Expected int
	// ExpectedSlug is the slug Expected is a version of. A new-entry form
	// whose slug is changed after a conflict writes a new entry again
	// (expected 0), instead of conflicting with the slug it left.
	ExpectedSlug string
	// Conflict, when set, is what the save conflicted with.
	Conflict *conflictView
}

// newForm shows an empty entry form.
func (h *Handler) newForm(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scopedWriter(r, rq)
	if err != nil {
		return err
	}
	d := editPage{IsNew: true, Slug: r.FormValue("slug")}
	h.render(w, r, rq, http.StatusOK, "edit", projectView(key, "New entry", d))
	return nil
}

// editForm shows the latest version of an entry in the form.
func (h *Handler) editForm(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scopedWriter(r, rq)
	if err != nil {
		return err
	}
	got, err := h.svc.Get(r.Context(), rq.caller, service.GetRequest{Project: key.Project.String(), Slug: mux.Vars(r)["slug"]})
	if err != nil {
		return err
	}
	d := editPage{Slug: got.Slug, Title: got.Title, Tags: strings.Join(got.Tags, ", "), Content: got.Content, Expected: got.LatestVersion, ExpectedSlug: got.Slug}
	// A title equal to the one the first line gives was derived (or set to
	// the same words): the form leaves it empty, so saving derives it again
	// from the new first line. A title a person set is kept as it is.
	d.DerivedTitle = service.DerivedTitle(got.Content)
	if d.Title == d.DerivedTitle {
		d.Title = ""
	}
	h.render(w, r, rq, http.StatusOK, "edit", projectView(key, "Edit "+got.Slug, d))
	return nil
}

// scopedWriter is scoped for pages that only make sense to a writer (the
// service decides: a read key gets forbidden instead of a form it cannot
// submit).
func (h *Handler) scopedWriter(r *http.Request, rq *request) (memory.Key, error) {
	vars := mux.Vars(r)
	return h.svc.ScopeWriter(r.Context(), rq.caller, memory.ProjectRef{Workspace: vars["ws"], Project: vars["p"]})
}

// save stores the form as the next version of its slug, under the person's
// key, through the same Remember that agents call. A failure shows the form
// again with what was typed and the reason; nothing is written.
func (h *Handler) save(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	d := editPage{
		IsNew:   r.PostFormValue("is_new") == "1",
		Slug:    strings.TrimSpace(r.PostFormValue("slug")),
		Title:   strings.TrimSpace(r.PostFormValue("title")),
		Tags:    r.PostFormValue("tags"),
		Content: normalizeNewlines(r.PostFormValue("content")),
	}
	d.Expected, err = intParam(r, "expected_version", 0, 0)
	if d.ExpectedSlug = strings.TrimSpace(r.PostFormValue("expected_slug")); d.ExpectedSlug != "" && d.ExpectedSlug != d.Slug {
		d.Expected = 0
	}
	if err == nil {
		expected := d.Expected
		var res service.WriteResult
		res, err = h.svc.Remember(r.Context(), rq.caller, service.RememberRequest{
			Project:         key.Project.String(),
			Slug:            d.Slug,
			Title:           d.Title,
			Content:         d.Content,
			Tags:            splitTags(d.Tags),
			ExpectedVersion: &expected,
		})
		if err == nil && res.State == memory.ProposalPending {
			// A key that only proposes (role propose): the write waits for
			// review, and the person sees it among their proposals.
			return h.redirect(w, r, rq, reviewURL(key.Project), proposedMessage("Proposed "+res.Slug, res))
		}
		if err == nil {
			return h.redirect(w, r, rq, entryURL(key.Project, res.Slug), "Saved "+res.Slug+" as version "+strconv.Itoa(res.Version)+".")
		}
	}
	if memory.ErrorCode(err) == memory.CodeConflict {
		return h.conflict(w, r, rq, key, d)
	}
	v := projectView(key, "Edit "+d.Slug, d)
	if c := memory.ErrorCode(err); c == memory.CodeInternal || c == memory.CodeForbidden || c == memory.CodeNotFound {
		return err
	}
	v.Error = message(err)
	h.render(w, r, rq, statusOf(err), "edit", v)
	return nil
}

// conflictView is what a save conflicted with: the version the person
// started from (Base; nil for a new entry, BaseGone when it cannot be read,
// a tombstone for one), the latest version now (Theirs, and TheirsText
// unless it is a tombstone), the person's own text, and the diff from base
// to theirs — what the other writer changed.
type conflictView struct {
	Base       *service.Entry
	BaseGone   bool
	Theirs     memory.VersionInfo
	TheirsText string
	TheirsTags []string
	Yours      string
	Diff       diffTable
	New        bool // the form was for a new entry and the slug exists
}

// conflict shows the edit form again after a save that conflicted, with
// base, theirs and yours and the form filled with yours. The form then
// expects the version shown as theirs: saving the merge writes the next
// version, and a write that lands meanwhile is a conflict again, shown the
// same way with the newer theirs. Nothing was written.
func (h *Handler) conflict(w http.ResponseWriter, r *http.Request, rq *request, key memory.Key, d editPage) error {
	ctx, project := r.Context(), key.Project.String()
	hist, err := h.svc.History(ctx, rq.caller, service.HistoryRequest{Project: project, Slug: d.Slug, Limit: 1})
	if err != nil {
		return err
	}
	c := &conflictView{Theirs: hist.Versions[0], Yours: d.Content, New: d.Expected == 0}
	// Theirs is read at the version History named, so what the page shows
	// and the version the form now expects are the same one.
	if !c.Theirs.Deleted {
		theirs, err := h.svc.Get(ctx, rq.caller, service.GetRequest{Project: project, Slug: d.Slug, Version: c.Theirs.Version})
		if err != nil {
			return err
		}
		c.TheirsText, c.TheirsTags = theirs.Content, theirs.Tags
	}
	base := ""
	if d.Expected >= c.Theirs.Version {
		c.BaseGone = d.Expected > 0 // a version that never was (a hand-made form)
	} else if d.Expected > 0 {
		got, err := h.svc.Get(ctx, rq.caller, service.GetRequest{Project: project, Slug: d.Slug, Version: d.Expected})
		switch code := memory.ErrorCode(err); {
		case err == nil:
			c.Base, base = &got, got.Content
		case code == memory.CodeNotFound || code == memory.CodeInvalid:
			c.BaseGone = true // a tombstone
		default:
			return err
		}
	}
	c.Diff = boundedDiff(base, c.TheirsText).table()
	what := d.Slug + " changed since you opened the form: it is now at version " + strconv.Itoa(c.Theirs.Version) + " by " + c.Theirs.Agent
	if c.New {
		what = d.Slug + " already exists: version " + strconv.Itoa(c.Theirs.Version) + " by " + c.Theirs.Agent
	}
	if c.Theirs.Deleted {
		what += " (forgotten)"
	}
	d.Expected, d.ExpectedSlug, d.Conflict = c.Theirs.Version, d.Slug, c
	v := projectView(key, "Conflict: "+d.Slug, d)
	v.Error = "Not saved: " + what + ". Compare below, merge into your text and save again."
	h.render(w, r, rq, http.StatusConflict, "edit", v)
	return nil
}

// forget writes a tombstone for the entry, conditional on the version the
// person saw.
func (h *Handler) forget(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	expected, err := intParam(r, "expected_version", 0, 1)
	if err != nil {
		return err
	}
	var exp *int
	if expected > 0 {
		exp = &expected
	}
	res, err := h.svc.Forget(r.Context(), rq.caller, service.ForgetRequest{Project: key.Project.String(), Slug: mux.Vars(r)["slug"], ExpectedVersion: exp})
	if err != nil {
		return err
	}
	if res.State == memory.ProposalPending {
		return h.redirect(w, r, rq, reviewURL(key.Project), proposedMessage("Proposed to forget "+res.Slug, res))
	}
	return h.redirect(w, r, rq, projectURL(key.Project), "Forgot "+res.Slug+" (tombstone version "+strconv.Itoa(res.Version)+"); its history stays readable.")
}

// restore writes an old version again as the newest version.
func (h *Handler) restore(w http.ResponseWriter, r *http.Request, rq *request) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	version, err := intParam(r, "version", 0, 1)
	if err != nil {
		return err
	}
	slug := mux.Vars(r)["slug"]
	res, err := h.svc.Restore(r.Context(), rq.caller, key.Project, slug, version)
	if err != nil {
		return err
	}
	return h.redirect(w, r, rq, entryURL(key.Project, slug),
		"Restored version "+strconv.Itoa(version)+" as version "+strconv.Itoa(res.Version)+".")
}

// splitTags reads "db, arch team:infra" as tags: commas or spaces separate.
func splitTags(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(f) == 0 {
		return nil
	}
	return f
}

// normalizeNewlines undoes the CRLF that browsers send for textareas, so
// an unchanged edit produces the same content and an empty diff.
func normalizeNewlines(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// proposedMessage tells a person that their write became a proposal.
func proposedMessage(what string, res service.WriteResult) string {
	base := "a new entry"
	if res.BaseVersion != nil && *res.BaseVersion > 0 {
		base = "version " + strconv.Itoa(*res.BaseVersion)
	}
	return what + " (proposal " + res.Proposal + ", based on " + base + "): it becomes a version when an admin approves it."
}
