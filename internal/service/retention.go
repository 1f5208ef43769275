package service

import (
	"context"
	"sync"
	"time"

	"munin/internal/memory"
)

// Defaults of the search-log retention (Options.SearchLogDays, SearchLogRows).
// The web UI's most-missed queries look back 7 days; 30 days cover a month of
// what agents searched. 50,000 rows of at most 1 KB bound a project's log at
// about 50 MB, whatever its keys do.
const (
	DefaultSearchLogDays = 30
	DefaultSearchLogRows = 50_000
)

// When the flusher prunes: the projects written since the last prune, at most
// every pruneEvery or as soon as one of them got pruneAfterRows new rows; and
// every project once every pruneAllEvery (the first time pruneFirstAfter
// after the start), so rows also age out of projects nobody searches now.
const (
	pruneEvery      = 10 * time.Second
	pruneAfterRows  = 1000
	pruneAllEvery   = time.Hour
	pruneFirstAfter = time.Minute
	pruneTimeout    = 30 * time.Second
)

// retention is what the search log keeps; a zero field keeps everything.
type retention struct {
	maxAge time.Duration
	rows   int
	now    func() time.Time
}

func (r retention) off() bool { return r.maxAge == 0 && r.rows == 0 }

// retention builds the retention the options ask for, defaults applied.
func (o Options) retention() retention {
	r := retention{now: o.Now}
	switch days := o.SearchLogDays; {
	case days == 0:
		r.maxAge = DefaultSearchLogDays * 24 * time.Hour
	case days > 0:
		r.maxAge = time.Duration(days) * 24 * time.Hour
	}
	switch rows := o.SearchLogRows; {
	case rows == 0:
		r.rows = DefaultSearchLogRows
	case rows > 0:
		r.rows = rows
	}
	return r
}

// pruneState is the flusher's bookkeeping of what to prune when.
type pruneState struct {
	mu     sync.Mutex // flush runs on any goroutine (Flush), pruning on run's
	dirty  map[memory.ProjectRef]int
	urgent bool // a project got pruneAfterRows rows since its last prune
	// lastPrune and lastAll are touched by run's goroutine only.
	lastPrune, lastAll time.Time
}

// written notes the rows just stored, for the next prune.
func (l *searchLog) written(rows []memory.SearchLogRow) {
	if l.keep.off() {
		return
	}
	p := &l.prune
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty == nil {
		p.dirty = map[memory.ProjectRef]int{}
	}
	for _, r := range rows {
		p.dirty[r.Project]++
		if p.dirty[r.Project] >= pruneAfterRows {
			p.urgent = true
		}
	}
}

// maybePrune prunes what is due at now (wall-clock time; the cut-off by age
// uses the service's clock). It runs on the flusher's goroutine, off the
// request path, and every delete goes through the workspace's writer.
func (l *searchLog) maybePrune(now time.Time) {
	if l.keep.off() {
		return
	}
	p := &l.prune
	if p.lastAll.IsZero() {
		p.lastAll = now.Add(pruneFirstAfter - pruneAllEvery)
	}
	all := now.Sub(p.lastAll) >= pruneAllEvery
	p.mu.Lock()
	due := p.urgent || (len(p.dirty) > 0 && now.Sub(p.lastPrune) >= pruneEvery)
	if !due && !all {
		p.mu.Unlock()
		return
	}
	refs := make([]memory.ProjectRef, 0, len(p.dirty))
	for ref := range p.dirty {
		refs = append(refs, ref)
	}
	p.dirty, p.urgent, p.lastPrune = nil, false, now
	p.mu.Unlock()
	if all {
		p.lastAll = now
		refs = nil // every project, the dirty ones among them
	}
	l.pruneProjects(refs, all)
}

// pruneProjects applies the retention to refs, or to every project with
// all set. Close stops it between two deletes.
func (l *searchLog) pruneProjects(refs []memory.ProjectRef, all bool) {
	ctx, cancel := context.WithTimeout(context.Background(), pruneTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if all {
		projects, err := l.store.ListProjects(ctx)
		if err != nil {
			l.log.Warn("search log retention: list projects", "err", err)
			return
		}
		for _, p := range projects {
			refs = append(refs, p.Ref)
		}
	}
	var before time.Time
	if l.keep.maxAge > 0 {
		before = l.keep.now().Add(-l.keep.maxAge)
	}
	deleted := 0
	for _, ref := range refs {
		n, err := l.store.PruneSearchLog(ctx, ref, before, l.keep.rows)
		deleted += n
		if ctx.Err() != nil {
			break
		}
		if err != nil && memory.ErrorCode(err) != memory.CodeNotFound {
			l.log.Warn("search log retention", "project", ref.String(), "err", err)
		}
	}
	if deleted > 0 {
		l.log.Info("search log pruned", "rows", deleted, "projects", len(refs))
	}
}

// Prune applies the retention to every project now; tests use it.
func (l *searchLog) Prune() {
	if !l.keep.off() {
		l.pruneProjects(nil, true)
	}
}

// PruneSearchLog applies the search-log retention to every project now. The
// flusher does so on its own; tests and operators call this to not wait.
func (s *Service) PruneSearchLog() {
	s.slog.Flush()
	s.slog.Prune()
}
