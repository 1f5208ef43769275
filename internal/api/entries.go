package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// rememberRequest is the body of POST /entries; the names are the MCP tool's.
type rememberRequest struct {
	Slug            string   `json:"slug"`
	Content         string   `json:"content"`
	Title           string   `json:"title"`
	Tags            []string `json:"tags"`
	ExpectedVersion *int     `json:"expected_version"`
	IdempotencyKey  string   `json:"idempotency_key"`
}

// entryResponse is GET /entries/{slug}: one live version and the slug's latest.
type entryResponse struct {
	Slug          string    `json:"slug"`
	Version       int       `json:"version"`
	Title         string    `json:"title"`
	Content       string    `json:"content"`
	Tags          []string  `json:"tags"`
	Agent         string    `json:"agent"`
	CreatedAt     time.Time `json:"created_at"`
	LatestVersion int       `json:"latest_version"`
}

type listResponse struct {
	Entries    []memory.EntrySummary `json:"entries"`
	NextCursor string                `json:"next_cursor"`
}

type historyResponse struct {
	Slug     string               `json:"slug"`
	Versions []memory.VersionInfo `json:"versions"`
}

type forgetResponse struct {
	Slug    string `json:"slug"`
	Version int    `json:"version"`
}

// remember: POST /entries → 201 {slug, version, created_at}.
func (h *handler) remember(w http.ResponseWriter, r *http.Request, key memory.Key) {
	var in rememberRequest
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
	res, err := h.svc.Remember(r.Context(), key, service.RememberInput{
		Slug:            in.Slug,
		Title:           in.Title,
		Content:         in.Content,
		Tags:            in.Tags,
		ExpectedVersion: in.ExpectedVersion,
		IdempotencyKey:  in.IdempotencyKey,
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Location", Prefix+"/entries/"+escapeSlug(res.Slug))
	writeJSON(w, http.StatusCreated, res)
}

// list: GET /entries?prefix=&tag=&limit=&cursor= → {entries, next_cursor}.
func (h *handler) list(w http.ResponseWriter, r *http.Request, key memory.Key) {
	p, err := readParams(r, "prefix", "tag", "limit", "cursor")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	entries, next, err := h.svc.List(r.Context(), key, memory.ListQuery{
		Prefix: p.str("prefix"),
		Tag:    p.str("tag"),
		Limit:  limit,
		Cursor: p.str("cursor"),
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	entries = nonNil(entries)
	for i := range entries {
		entries[i].Tags = nonNil(entries[i].Tags)
	}
	writeJSON(w, http.StatusOK, listResponse{Entries: entries, NextCursor: next})
}

// get: GET /entries/{slug}?version=N → the version (default: latest live one).
func (h *handler) get(w http.ResponseWriter, r *http.Request, key memory.Key) {
	p, err := readParams(r, "version")
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
	res, err := h.svc.Get(r.Context(), key, mux.Vars(r)["slug"], version)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, entryResponse{
		Slug:          res.Slug,
		Version:       res.Version.Version,
		Title:         res.Title,
		Content:       res.Content,
		Tags:          nonNil(res.Tags),
		Agent:         res.Agent,
		CreatedAt:     res.CreatedAt,
		LatestVersion: res.LatestVersion,
	})
}

// history: GET /history/{slug}?limit= → {slug, versions} newest first.
func (h *handler) history(w http.ResponseWriter, r *http.Request, key memory.Key) {
	p, err := readParams(r, "limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	limit, err := p.int("limit")
	if err != nil {
		WriteError(w, err)
		return
	}
	slug := mux.Vars(r)["slug"]
	versions, err := h.svc.History(r.Context(), key, slug, limit)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, historyResponse{Slug: slug, Versions: nonNil(versions)})
}

// forget: DELETE /entries/{slug}?expected_version= → {slug, version} of the tombstone.
func (h *handler) forget(w http.ResponseWriter, r *http.Request, key memory.Key) {
	p, err := readParams(r, "expected_version")
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
	res, err := h.svc.Forget(r.Context(), key, mux.Vars(r)["slug"], expected)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, forgetResponse{Slug: res.Slug, Version: res.Version})
}

// escapeSlug escapes each segment of a slug for a URL path, keeping the slashes.
func escapeSlug(slug string) string {
	return (&url.URL{Path: slug}).EscapedPath()
}
