package web

import (
	"net/http"

	"munin/internal/memory"
)

// cachedWork returns the render under key from the cache, or computes it
// under the caller's limits for CPU-heavy work (service.HeavyWork: the
// same allowance per key and per project as recalls) and keeps it. Over
// the limits the page is refused with 429 and a Retry-After. The caller
// has already loaded what is rendered through the service, which
// authorized it; a cache hit is therefore served only to a caller who may
// read it. Requests for a render being computed wait for it rather than
// computing it again.
func cachedWork[T any](h *Handler, r *http.Request, rq *request, ref memory.ProjectRef, key string, compute func() T, size func(T) int) (T, error) {
	var zero T
	v, hit, done, err := h.pages.cache.get(r.Context(), key)
	if err != nil {
		return zero, err
	}
	if hit {
		return v.(T), nil
	}
	// Whatever happens (a refusal, a panic), the waiting requests go on.
	kept := false
	defer func() {
		if !kept {
			done(nil, -1)
		}
	}()
	release, err := h.svc.HeavyWork(r.Context(), rq.caller, ref)
	if err != nil {
		return zero, err
	}
	defer release()
	out := compute()
	done(out, size(out))
	kept = true
	return out, nil
}

// renderVersion is version v of an entry in ref rendered (bounded, cached).
func (h *Handler) renderVersion(r *http.Request, rq *request, ref memory.ProjectRef, v memory.Version) (rendered, error) {
	return cachedWork(h, r, rq, ref, versionKey("entry", ref, v), func() rendered { return renderBounded(v.Content) }, entrySize)
}

// diffVersions is the line diff from version a to version b of an entry in
// ref (bounded, cached).
func (h *Handler) diffVersions(r *http.Request, rq *request, ref memory.ProjectRef, a, b memory.Version) (diffTable, error) {
	key := versionKey("diff", ref, a) + "\x00" + versionKey("to", ref, b)
	return cachedWork(h, r, rq, ref, key, func() diffTable { return boundedDiff(a.Content, b.Content).table() }, diffSize)
}
