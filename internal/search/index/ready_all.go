package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
)

// ReadyAll is Ready for several projects under one deadline, within from
// now (the registry's IndexWait): it returns their indexes, in the order of
// ps, and one func that releases them all.
//
// It first waits for every project's queued refreshes and build at once, holding
// no index, so a slow build in one project never holds up the rebuilds and
// compactions of another (invariant 4,
// docs/architecture.md#invariant-4-projects-do-not-block-each-other). Then it
// takes the indexes in a fixed order (by workspace, then project): two searches
// over overlapping projects cannot each hold one index while waiting for the
// other behind a pending swap. An index dropped in between (a failed batch) sends
// it back to the first step.
func ReadyAll(ctx context.Context, within time.Duration, ps []*Project) ([]bleve.Index, func(), error) {
	wait, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	start := time.Now()
	order := slices.Clone(ps)
	slices.SortFunc(order, func(a, b *Project) int {
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
func settleAll(ctx context.Context, ps []*Project) (*Project, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		failed *Project
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
func takeIndexes(ps, order []*Project) ([]bleve.Index, func(), *Project) {
	held := make(map[*Project]bleve.Index, len(ps))
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
