package web

import (
	"net/http"

	"munin/internal/memory"
)

// heavyShow is the size of a render from which showing it on a page counts
// as heavy work too, cached or not: a page that copies 250 KB of cached
// render costs about 0.6 ms of CPU and 1 MB of allocation
// (BenchmarkHostileDiff/cached, BenchmarkHostileQuotes/cached), and one
// key's pages, refused together and retried together after the refusal's
// hold, arrived eight at a time and took both cores from other projects'
// recalls (the hostile-load test's attack 15). Under the heavy-work limits
// a project shows such pages on at most its share of the cores.
const heavyShow = 32 << 10

// cachedWork returns the render under key from the cache, or computes it
// under the caller's limits for CPU-heavy work (service.HeavyWork: the
// same allowance per key and per project as recalls) and keeps it. Over
// the limits the page is refused with 429 and a Retry-After. A render of
// heavyShow bytes or more keeps its place for heavy work until the page is
// written (rq.holdHeavy). The caller has already loaded what is rendered
// through the service, which authorized it; a cache hit is therefore
// served only to a caller who may read it. Requests for a render being
// computed wait for it rather than computing it again.
func cachedWork[T any](h *Handler, r *http.Request, rq *request, ref memory.ProjectRef, key string, compute func() T, size func(T) int) (T, error) {
	var zero T
	v, hit, done, err := h.pages.cache.get(r.Context(), key)
	if err != nil {
		return zero, err
	}
	if hit {
		if size(v.(T)) >= heavyShow {
			if err := h.holdHeavy(r, rq, ref); err != nil {
				return zero, err
			}
		}
		return v.(T), nil
	}
	// Whatever happens (a refusal, a panic), the waiting requests go on.
	kept := false
	defer func() {
		if !kept {
			done(nil, -1)
		}
	}()
	if err := h.holdHeavy(r, rq, ref); err != nil {
		return zero, err
	}
	out := compute()
	done(out, size(out))
	kept = true
	if size(out) < heavyShow {
		rq.releaseHeavy()
	}
	return out, nil
}

// holdHeavy takes a place for heavy work of rq's caller in ref, held until
// the page is written (the page and post wrappers release it) or
// releaseHeavy. A request that holds one already uses it: a page with two
// renders takes one place, and never waits for its own.
func (h *Handler) holdHeavy(r *http.Request, rq *request, ref memory.ProjectRef) error {
	if rq.heavy != nil {
		return nil
	}
	release, err := h.svc.HeavyWork(r.Context(), rq.caller, ref)
	if err != nil {
		return err
	}
	rq.heavy = release
	return nil
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
