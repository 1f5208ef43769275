package api

import (
	"net/http"
	"net/url"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// remember: POST /entries {project?, slug, content, …} → 201 {project, slug, version, created_at}.
func (h *handler) remember(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	var in service.RememberRequest
	if !decodeJSON(w, r, &in) {
		return
	}
	// The Idempotency-Key header is the HTTP convention for the same thing;
	// accept either, but not two different ones.
	if hk := r.Header.Get("Idempotency-Key"); hk != "" {
		if in.IdempotencyKey != "" && in.IdempotencyKey != hk {
			WriteError(w, memory.Errorf(memory.CodeInvalid, "Idempotency-Key header and idempotency_key field differ; send one"))
			return
		}
		in.IdempotencyKey = hk
	}
	res, err := h.svc.Remember(r.Context(), c, in)
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Location", Prefix+"/entries/"+escapeSlug(res.Slug))
	writeJSON(w, http.StatusCreated, res)
}

// list: GET /entries?project=&prefix=&tag=&limit=&cursor= → {entries (each with project), next_cursor}.
func (h *handler) list(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	p, err := readParams(r, "project", "prefix", "tag", "limit", "cursor")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	res, err := h.svc.List(r.Context(), c, service.ListRequest{
		Project: p.str("project"),
		Prefix:  p.str("prefix"),
		Tag:     p.str("tag"),
		Limit:   limit,
		Cursor:  p.str("cursor"),
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// get: GET /entries/{slug}?project=&version=N → the version with its project (default: latest live one).
func (h *handler) get(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	p, err := readParams(r, "project", "version")
	if err != nil {
		WriteError(w, err)
		return
	}
	version, given, err := p.optInt("version")
	if err != nil {
		WriteError(w, err)
		return
	}
	if given && version < 1 {
		// The service reads 0 as "latest"; an explicit ?version=0 is a mistake.
		WriteError(w, memory.Errorf(memory.CodeInvalid, "query parameter version must be 1 or more, got %d", version))
		return
	}
	res, err := h.svc.Get(r.Context(), c, service.GetRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], Version: version})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// history: GET /history/{slug}?project=&limit= → {project, slug, versions} newest first.
func (h *handler) history(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	p, err := readParams(r, "project", "limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	res, err := h.svc.History(r.Context(), c, service.HistoryRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], Limit: limit})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// forget: DELETE /entries/{slug}?project=&expected_version= → {project, slug, version, created_at} of the tombstone.
func (h *handler) forget(w http.ResponseWriter, r *http.Request, c memory.Caller) {
	p, err := readParams(r, "project", "expected_version")
	if err != nil {
		WriteError(w, err)
		return
	}
	ev, given, err := p.optInt("expected_version")
	if err != nil {
		WriteError(w, err)
		return
	}
	var expected *int
	if given {
		expected = &ev
	}
	res, err := h.svc.Forget(r.Context(), c, service.ForgetRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], ExpectedVersion: expected})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// escapeSlug escapes each segment of a slug for a URL path, keeping the slashes.
func escapeSlug(slug string) string {
	return (&url.URL{Path: slug}).EscapedPath()
}
