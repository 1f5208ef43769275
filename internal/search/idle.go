package search

import (
	"cmp"
	"slices"
	"time"

	"munin/internal/search/index"
)

// Idle indexes are closed, so that many projects touched once do not hold
// their indexes' memory for ever: a closed index costs nothing, and its next
// search opens it from disk and catches up with the writes made meanwhile
// (writes to a closed index cost no index work at all). The vectors of the
// meaning search (package vector) are dropped the same way and loaded again.

// closeIdle closes, until the registry is closed, every project index no
// search used for Options.IdleClose.
func (r *Registry) closeIdle() {
	if r.opts.IdleClose < 0 {
		return
	}
	tick := time.NewTicker(max(r.opts.IdleClose/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-r.base.Done():
			return
		case <-tick.C:
		}
		cutoff := time.Now().Add(-r.opts.IdleClose).UnixNano()
		r.mu.Lock()
		var idle []*index.Project
		for _, p := range r.projects {
			if p.LastUse() < cutoff {
				idle = append(idle, p)
			}
		}
		r.mu.Unlock()
		for _, p := range idle {
			if p.CloseIfIdle(cutoff) {
				r.idleClosed.Add(1)
			}
		}
		if r.meaning != nil {
			r.vectorsUnloaded.Add(int64(r.meaning.UnloadIdle(cutoff)))
		}
	}
}

// The cap on open indexes (Options.MaxOpen). Each open index holds its
// mapped segment files, its bolt file, scorch's goroutines and the
// in-memory part of its segments (docs/search.md#what-an-open-project-holds);
// the idle time alone lets a thousand projects touched within it hold a
// thousand of them. Past the cap the least recently used are closed, as
// idle ones are: the next search opens the index again from disk (1–2.4 ms)
// and catches up with the writes made meanwhile, so a closed-by-cap index
// answers the same (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes).

// capCheckEvery is how often the registry looks whether an index was opened
// since its last look. An open is counted as it happens (index.Counters), so
// a look costs two atomic loads unless something opened; the cap may be
// exceeded for this long.
const capCheckEvery = 100 * time.Millisecond

// capOpen keeps, until the registry is closed, at most Options.MaxOpen
// indexes open.
func (r *Registry) capOpen() {
	if r.opts.MaxOpen < 0 {
		return
	}
	tick := time.NewTicker(capCheckEvery)
	defer tick.Stop()
	var seen int64
	over := false
	for {
		select {
		case <-r.base.Done():
			return
		case <-tick.C:
		}
		opened := r.counters.Opened.Load() + r.counters.Builds.Load()
		if opened == seen && !over {
			continue
		}
		seen = opened
		over = r.closeOverCap()
	}
}

// closeOverCap closes the least recently used open indexes beyond
// Options.MaxOpen and tells whether the registry is still over it (indexes
// being opened, or busy ones that could not be closed now): then the next
// look tries again.
func (r *Registry) closeOverCap() bool {
	type use struct {
		p    *index.Project
		last int64
	}
	r.mu.Lock()
	ps := make([]*index.Project, 0, len(r.projects))
	for _, p := range r.projects {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	var open []use
	opening := 0
	for _, p := range ps {
		switch {
		case p.Opening():
			opening++
		case p.Current() != nil:
			open = append(open, use{p, p.LastUse()})
		}
	}
	excess := len(open) + opening - r.opts.MaxOpen
	if excess <= 0 {
		return false
	}
	slices.SortFunc(open, func(a, b use) int { return cmp.Compare(a.last, b.last) })
	for _, u := range open {
		if excess == 0 {
			break
		}
		// Used since it was looked at: it is wanted, and no longer the
		// least recently used.
		if u.p.CloseIfIdle(u.last + 1) {
			r.capClosed.Add(1)
			excess--
		}
	}
	return excess > 0 || opening > 0
}
