package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
)

// MaxSearchProjects is how many projects one SearchProjects may search: as
// many as a caller may hold keys for.
const MaxSearchProjects = memory.MaxCallerKeys

// SearchProjects is one recall over several projects: every project's index
// is searched with the same query, and the hits come back as one list, best
// first, at most q.Limit long (DefaultLimit, MaxLimit as for Search). q.Tags
// restrict the hits in every project. Each hit carries its project.
//
// Scores are comparable across projects: each index scores as if one index
// held the entries of all the projects searched (see scale.go). A single ref
// is exactly Search. refs must be distinct, 1 to MaxSearchProjects of them.
//
// Read-your-writes holds for every project (invariant 3): the refreshes
// queued in any of them before the call are applied first, and builds run,
// under one Options.IndexWait for all of them; past it the search answers
// unavailable with a retry hint, as Search does.
//
// With Options.Meaning on, the keyword hits are fused with the meaning hits
// (fuse.go), and each hit's Match says which path found it; else every hit
// is a keyword hit (MatchWords).
func (r *Registry) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	if r.meaning != nil {
		return r.searchFused(ctx, refs, q)
	}
	return r.searchWords(ctx, refs, q)
}

// searchWords is SearchProjects by the keyword index alone.
func (r *Registry) searchWords(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	rc, ms, err := r.rankWords(ctx, refs, q)
	if err != nil {
		return nil, err
	}
	return r.hitsFrom(ctx, rc.text, ms)
}

// rankWords is searchWords' ranking: the matches, best first, not yet read
// from the Source (the fusion reads only the ones it keeps).
func (r *Registry) rankWords(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) (recall, []match, error) {
	rc, err := r.prepare(q)
	if err != nil {
		return recall{}, nil, err
	}
	if err := checkRefs(refs); err != nil {
		return recall{}, nil, err
	}
	if len(refs) == 1 {
		ms, err := r.rankOne(ctx, refs[0], rc)
		return rc, ms, err
	}
	ps := make([]*project, len(refs))
	for i, ref := range refs {
		if ps[i], err = r.project(ref); err != nil {
			return recall{}, nil, err
		}
	}
	idxs, release, err := r.readyAll(ctx, ps)
	if err != nil {
		return recall{}, nil, err
	}
	defer release()
	ms, err := r.searchTiers(ctx, refs, idxs, rc)
	return rc, ms, err
}

// checkRefs refuses an empty, too long or repeating list of projects.
func checkRefs(refs []memory.ProjectRef) error {
	if len(refs) == 0 {
		return memory.Errorf(memory.CodeInvalid, "no project to search")
	}
	if len(refs) > MaxSearchProjects {
		return memory.Errorf(memory.CodeInvalid, "a recall searches at most %d projects, not %d", MaxSearchProjects, len(refs))
	}
	seen := make(map[memory.ProjectRef]bool, len(refs))
	for _, ref := range refs {
		if seen[ref] {
			return memory.Errorf(memory.CodeInvalid, "project %s is listed twice", ref)
		}
		seen[ref] = true
	}
	return nil
}

// readyAll is ready for several projects under one deadline: it returns
// their indexes, in the order of ps, and one func that releases them all.
//
// It first waits for every project's queued refreshes and build at once,
// holding no index, so a slow build in one project never holds up the
// rebuilds and compactions of another (invariant 4). Then it takes the
// indexes in a fixed order (by workspace, then project): two searches over
// overlapping projects cannot each hold one index while waiting for the
// other behind a pending swap. An index dropped in between (a failed batch)
// sends it back to the first step.
func (r *Registry) readyAll(ctx context.Context, ps []*project) ([]bleve.Index, func(), error) {
	wait, cancel := context.WithTimeout(ctx, r.opts.IndexWait)
	defer cancel()
	start := time.Now()
	order := slices.Clone(ps)
	slices.SortFunc(order, func(a, b *project) int {
		return cmp.Or(cmp.Compare(a.ref.Workspace, b.ref.Workspace), cmp.Compare(a.ref.Project, b.ref.Project))
	})
	for {
		if p, err := settleAll(wait, ps); err != nil {
			return nil, nil, p.waitErr(ctx, wait, err, start)
		}
		idxs, release, missing := takeIndexes(ps, order)
		if missing == nil {
			return idxs, release, nil
		}
		if err := wait.Err(); err != nil {
			return nil, nil, missing.waitErr(ctx, wait, fmt.Errorf("search %s: %w", missing.ref, err), start)
		}
	}
}

// settleAll waits, for every project at once, until the refreshes queued
// before the call are applied and its index is built. On failure it returns
// the first project that failed and its error; the others stop waiting.
func settleAll(ctx context.Context, ps []*project) (*project, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		failed *project
		first  error
		wg     sync.WaitGroup
	)
	for _, p := range ps {
		wg.Go(func() {
			err := p.settle(ctx)
			if err == nil {
				var release func()
				if _, release, err = p.searchIndex(ctx); err == nil {
					release()
				}
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					failed, first = p, err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed, first
}

// takeIndexes holds the built index of every project, taking them in order,
// and returns them in the order of ps. If one has no index (dropped since it
// was built), it holds nothing and returns that project instead.
func takeIndexes(ps, order []*project) ([]bleve.Index, func(), *project) {
	held := make(map[*project]bleve.Index, len(ps))
	releaseAll := func() {
		for p := range held {
			p.swap.RUnlock()
		}
	}
	for _, p := range order {
		p.swap.RLock()
		if p.idx == nil {
			p.swap.RUnlock()
			releaseAll()
			return nil, nil, p
		}
		held[p] = p.idx
	}
	idxs := make([]bleve.Index, len(ps))
	for i, p := range ps {
		idxs[i] = held[p]
	}
	return idxs, releaseAll, nil
}
