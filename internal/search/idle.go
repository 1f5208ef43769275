package search

import (
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
