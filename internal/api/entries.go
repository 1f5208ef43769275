package api

import (
	"net/http"
	"net/url"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// remember: POST /entries {project?, slug, content, …} → 201 {project, slug, version, created_at}.
func (h *handler) remember(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	var in service.RememberRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	// The Idempotency-Key header is the HTTP convention for the same thing;
	// accept either, but not two different ones.
	if hk := r.Header.Get("Idempotency-Key"); hk != "" {
		if in.IdempotencyKey != "" && in.IdempotencyKey != hk {
			return memory.Errorf(memory.CodeInvalid, "Idempotency-Key header and idempotency_key field differ; send one")
		}
		in.IdempotencyKey = hk
	}
	res, err := h.svc.Remember(r.Context(), c, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", Prefix+"/entries/"+escapeSlug(res.Slug))
	writeJSON(w, http.StatusCreated, res)
	return nil
}

// list: GET /entries?project=&prefix=&tag=&limit=&cursor=&as_of= → {entries (each with project), next_cursor}.
func (h *handler) list(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "project", "prefix", "tag", "limit", "cursor", "as_of")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	res, err := h.svc.List(r.Context(), c, service.ListRequest{
		Project: p.str("project"),
		Prefix:  p.str("prefix"),
		Tag:     p.str("tag"),
		Limit:   limit,
		Cursor:  p.str("cursor"),
		AsOf:    p.str("as_of"),
	})
	return reply(w, http.StatusOK, res, err)
}

// get: GET /entries/{slug}?project=&version=N&as_of= → the version with its project (default: latest live one).
func (h *handler) get(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "project", "version", "as_of")
	if err != nil {
		return err
	}
	version, given, err := p.optInt("version")
	if err != nil {
		return err
	}
	if given && version < 1 {
		// The service reads 0 as "latest"; an explicit ?version=0 is a mistake.
		return memory.Errorf(memory.CodeInvalid, "query parameter version must be 1 or more, got %d", version)
	}
	res, err := h.svc.Get(r.Context(), c, service.GetRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], Version: version, AsOf: p.str("as_of")})
	return reply(w, http.StatusOK, res, err)
}

// history: GET /history/{slug}?project=&limit=&as_of= → {project, slug, versions} newest first.
func (h *handler) history(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "project", "limit", "as_of")
	if err != nil {
		return err
	}
	limit, err := p.int("limit")
	if err != nil {
		return err
	}
	res, err := h.svc.History(r.Context(), c, service.HistoryRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], Limit: limit, AsOf: p.str("as_of")})
	return reply(w, http.StatusOK, res, err)
}

// forget: DELETE /entries/{slug}?project=&expected_version= → {project, slug, version, created_at} of the tombstone.
func (h *handler) forget(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	p, err := readParams(r, "project", "expected_version")
	if err != nil {
		return err
	}
	ev, given, err := p.optInt("expected_version")
	if err != nil {
		return err
	}
	var expected *int
	if given {
		expected = &ev
	}
	res, err := h.svc.Forget(r.Context(), c, service.ForgetRequest{Project: p.str("project"), Slug: mux.Vars(r)["slug"], ExpectedVersion: expected})
	return reply(w, http.StatusOK, res, err)
}

// escapeSlug escapes each segment of a slug for a URL path, keeping the slashes.
func escapeSlug(slug string) string {
	return (&url.URL{Path: slug}).EscapedPath()
}
