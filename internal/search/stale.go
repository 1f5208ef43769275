package search

import (
	"time"

	"munin/internal/memory"
)

// Stale hits. An entry past its valid_until or superseded by another
// entry's write stays in the index (its document does not change when the
// clock passes or another slug is written: invariant 3,
// docs/architecture.md#invariant-3-read-your-writes) and is told apart
// where hits are read (hits.go). A recall leaves it out, or with
// IncludeStale lists it below every live hit.
//
// Leaving hits out must not shorten the answer while the index holds more
// live matches: a pass that fetched `fetch` candidates and kept fewer than
// the limit live runs again four times as deep, up to StaleDepth
// candidates. So a project without stale entries pays one pass, exactly as
// before; a recall whose best candidates are mostly stale pays at most
// ⌈log₄(StaleDepth/limit)⌉ more passes (five for limit 1, three for the
// default 10), each a search and one read of its hits; and a query whose
// StaleDepth best matches hold fewer than limit live entries answers with
// the live ones found among them.

// StaleDepth bounds how deep a recall looks for live hits below stale ones:
// the candidates of its last pass.
const StaleDepth = 8 * MaxLimit

// staleGrowth is how much deeper each further pass looks.
const staleGrowth = 4

// searchLive runs pass (the best fetch hits, stale ones marked; full: the
// candidates filled fetch) until it has q.Limit live hits, the index has no
// more candidates or StaleDepth is reached, and arranges the answer.
func (r *Registry) searchLive(q memory.SearchQuery, pass func(q memory.SearchQuery, fetch int) ([]memory.Hit, bool, error)) ([]memory.Hit, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	q.Limit = limit
	if q.At.IsZero() {
		q.At = time.Now()
	}
	depth := max(limit, StaleDepth)
	for fetch := limit; ; fetch = min(fetch*staleGrowth, depth) {
		hits, full, err := pass(q, fetch)
		if err != nil {
			return nil, err
		}
		if live := countLive(hits); live >= limit || !full || fetch >= depth {
			return arrangeStale(hits, limit, q.IncludeStale), nil
		}
	}
}

// countLive counts the hits without a State.
func countLive(hits []memory.Hit) int {
	n := 0
	for _, h := range hits {
		if h.State == "" {
			n++
		}
	}
	return n
}

// arrangeStale is the answer of a recall: the live hits in their order,
// then (includeStale) the stale ones in theirs, at most limit. A stale
// hit's score is scaled to at most the last live score kept, as a lower
// tier's is (rank/tiers.go), so that scores fall along the list.
func arrangeStale(hits []memory.Hit, limit int, includeStale bool) []memory.Hit {
	out := make([]memory.Hit, 0, min(len(hits), limit))
	var stale []memory.Hit
	for _, h := range hits {
		switch {
		case h.State == "":
			if len(out) < limit {
				out = append(out, h)
			}
		case includeStale:
			stale = append(stale, h)
		}
	}
	if len(stale) == 0 || len(out) >= limit {
		return out
	}
	stale = stale[:min(len(stale), limit-len(out))]
	if len(out) > 0 {
		floor, top := out[len(out)-1].Score, 0.0
		for _, h := range stale {
			top = max(top, h.Score)
		}
		if top > floor && top > 0 {
			for i := range stale {
				stale[i].Score *= floor / top
			}
		}
	}
	return append(out, stale...)
}
