package search

import (
	"context"

	"munin/internal/memory"
	"munin/internal/search/index"
	"munin/internal/search/rank"
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
// held the entries of all the projects searched (see rank/scale.go). A single ref
// is exactly Search. refs must be distinct, 1 to MaxSearchProjects of them.
//
// Read-your-writes holds for every project (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes): the refreshes queued in any
// of them before the call are applied first, and builds run, under one
// Options.IndexWait for all of them; past it the search answers unavailable with
// a retry hint, as Search does.
//
// With Options.Meaning on, the keyword hits are fused with the meaning hits
// (fuse.go), and each hit's Match says which path found it; else every hit
// is a keyword hit (MatchWords).
//
// Entries past their valid_until or superseded at q.At are left out, and
// the search reaches deeper so that the answer still holds q.Limit live
// hits when there are that many (stale.go); with q.IncludeStale they are
// kept, below every live hit, marked by Hit.State. (Search, the index's own
// view of one project, marks them and keeps them in place.)
func (r *Registry) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	return r.searchLive(q, func(q memory.SearchQuery, fetch int) ([]memory.Hit, bool, error) {
		if r.meaning != nil {
			return r.searchFused(ctx, refs, q, fetch)
		}
		return r.searchWords(ctx, refs, q, fetch)
	})
}

// searchWords is one pass of SearchProjects by the keyword index alone: the
// best fetch hits, stale ones marked; full tells whether the matches filled
// fetch.
func (r *Registry) searchWords(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery, fetch int) ([]memory.Hit, bool, error) {
	rc, ms, err := r.rankWords(ctx, refs, q, fetch)
	if err != nil {
		return nil, false, err
	}
	hits, err := r.hitsAt(ctx, rc.text, ms, q.At)
	return hits, len(ms) >= fetch, err
}

// rankWords is searchWords' ranking: the best depth matches, not yet read
// from the Source (the fusion reads only the ones it keeps). depth may
// exceed MaxLimit: a deeper pass looks for live hits below stale ones.
func (r *Registry) rankWords(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery, depth int) (recall, []rank.Match, error) {
	rc, err := r.prepare(q)
	if err != nil {
		return recall{}, nil, err
	}
	rc.Limit = depth
	if err := checkRefs(refs); err != nil {
		return recall{}, nil, err
	}
	if len(refs) == 1 {
		ms, err := r.rankOne(ctx, refs[0], rc)
		return rc, ms, err
	}
	ps := make([]*index.Project, len(refs))
	for i, ref := range refs {
		if ps[i], err = r.project(ref); err != nil {
			return recall{}, nil, err
		}
	}
	idxs, release, err := index.ReadyAll(ctx, r.opts.IndexWait, ps)
	if err != nil {
		return recall{}, nil, err
	}
	defer release()
	ms, err := rank.Tiers(ctx, refs, idxs, rc.Query, r.rankOpts())
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
