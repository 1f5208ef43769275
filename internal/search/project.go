package search

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/memory"
)

// project is one project's index and the machinery that keeps it in step
// with the Source.
type project struct {
	reg *Registry
	ref memory.ProjectRef

	// mu is the project's lock. It serializes the build, every refresh batch
	// and every compaction, and each of them reads the Source while holding
	// it: reads are applied in the order they were made, so the index only
	// ever moves forward. Searches never take it once the index is built.
	mu sync.Mutex
	// versions is the highest version applied per slug (tombstones
	// included). A read older than that is stale and skipped: a second guard,
	// beside the lock, that a forgotten or replaced version never comes back.
	versions map[string]int
	// dirty holds every slug applied by a refresh since the last build,
	// recent those since the last compaction (see compactLocked).
	dirty  map[string]struct{}
	recent map[string]struct{}
	// partial counts compactions of recent since the last fold of dirty.
	partial int
	// smallBatches counts refresh batches since the last compaction or build.
	smallBatches int
	// lastRound is the slug count of the last refresh batch (see gather).
	lastRound int
	closed    bool

	// swap guards idx. Searches hold it shared while they use the index, so
	// an index swapped out (rebuild, Close) is closed only after them.
	swap sync.RWMutex
	idx  bleve.Index // nil until built

	// qmu guards the queue of refreshes and the build attempt. It is held
	// only for a few instructions, never across I/O.
	qmu        sync.Mutex
	collecting *round   // refreshes waiting for the next batch
	applying   *round   // the batch being applied, nil between batches
	draining   bool     // a drain goroutine is running
	building   *attempt // a build started on behalf of searches
}

// attempt is one build started for searches; waiters see its error.
type attempt struct {
	done    chan struct{}
	err     error
	started time.Time // for the retry hint of searches that gave up
}

func newProject(r *Registry, ref memory.ProjectRef) *project {
	return &project{reg: r, ref: ref}
}

// index returns the current index or nil; for Stats only.
func (p *project) index() bleve.Index {
	p.swap.RLock()
	defer p.swap.RUnlock()
	return p.idx
}

// setIndex installs idx and returns the previous index. Because it takes swap
// exclusively, no search uses the previous index any more when it returns.
func (p *project) setIndex(idx bleve.Index) bleve.Index {
	p.swap.Lock()
	defer p.swap.Unlock()
	old := p.idx
	p.idx = idx
	return old
}

// searchIndex returns the built index, building it first if needed, and a
// release func the caller must call when it is done with the index.
func (p *project) searchIndex(ctx context.Context) (bleve.Index, func(), error) {
	for {
		p.swap.RLock()
		if p.idx != nil {
			return p.idx, p.swap.RUnlock, nil
		}
		p.swap.RUnlock()

		p.qmu.Lock()
		a := p.building
		if a == nil {
			a = &attempt{done: make(chan struct{}), started: time.Now()}
			p.building = a
			go p.buildForSearch(a)
		}
		p.qmu.Unlock()

		select {
		case <-a.done:
			if a.err != nil {
				return nil, nil, a.err
			}
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("search %s: %w", p.ref, ctx.Err())
		}
	}
}

// buildForSearch builds in its own goroutine so that a searcher giving up
// does not cancel a build other searchers (and refreshes) wait for.
func (p *project) buildForSearch(a *attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a.err = p.buildLocked()
	p.qmu.Lock()
	p.building = nil // a failed build is retried by the next caller
	p.qmu.Unlock()
	close(a.done)
}

// buildLocked builds the index from the Source unless it is built. p.mu is held.
func (p *project) buildLocked() error {
	if p.closed {
		return errClosed
	}
	if p.index() != nil {
		return nil
	}
	idx, versions, err := p.buildIndex()
	if err != nil {
		return err
	}
	p.setIndex(idx)
	p.versions = versions
	p.dirty = make(map[string]struct{})
	p.recent = make(map[string]struct{})
	p.partial = 0
	p.smallBatches = 0
	return nil
}

// buildIndex makes a fresh index holding the latest live version of every
// entry. p.mu is held, so refreshes arriving meanwhile wait and are applied
// after it (invariant 4); they reread the Source then, so nothing they wrote
// is lost even if the scan read an older state.
func (p *project) buildIndex() (bleve.Index, map[string]int, error) {
	r := p.reg
	// Scorch with an empty path keeps its segments in memory.
	idx, err := bleve.NewUsing("", r.mapping, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("new index for %s: %w", p.ref, err)
	}
	versions := make(map[string]int)
	b := newSizedBatch(idx, r.opts.BatchBytes, r.opts.BuildBatch)
	err = r.src.ScanLatest(r.base, p.ref, func(v memory.Version) error {
		if v.Deleted {
			return nil // ScanLatest promises live versions; be safe anyway
		}
		versions[v.Slug] = v.Version
		return b.index(v)
	})
	if err == nil {
		err = b.flush()
	}
	if err != nil {
		idx.Close()
		return nil, nil, fmt.Errorf("build index of %s: %w", p.ref, err)
	}
	r.builds.Add(1)
	return idx, versions, nil
}

// applyLocked rereads each slug from the Source and applies them in bleve
// batches of at most Options.BatchBytes of text (usually one). p.mu is held and the index is built. compaction marks the
// re-indexing of compactLocked, which is not counted as a refresh batch.
func (p *project) applyLocked(slugs map[string]struct{}, compaction bool) error {
	r := p.reg
	b := newSizedBatch(p.index(), r.opts.BatchBytes, 0)
	seen := make(map[string]int, len(slugs))
	latest, err := p.readLatest(slugs)
	if err != nil {
		return err
	}
	// drop throws the index away once it may hold part of the batch: the
	// next use rebuilds it from the Source, the only safe state.
	drop := func(err error) error {
		if b.applied {
			if old := p.setIndex(nil); old != nil {
				old.Close()
			}
		}
		return err
	}
	for slug := range slugs {
		v, err := latest(slug)
		switch {
		case memory.ErrorCode(err) == memory.CodeNotFound:
			b.delete(slug)
			seen[slug] = -1
		case err != nil:
			return drop(fmt.Errorf("read %s in %s: %w", slug, p.ref, err))
		case v.Version < p.versions[slug]:
			// Stale read: a newer version (or tombstone) is already applied.
		case v.Deleted:
			b.delete(slug)
			seen[slug] = v.Version
		default:
			if err := b.index(v); err != nil {
				return drop(fmt.Errorf("apply batch to %s: %w", p.ref, err))
			}
			seen[slug] = v.Version
		}
	}
	if err := b.flush(); err != nil {
		return drop(fmt.Errorf("apply batch to %s: %w", p.ref, err))
	}
	for slug, ver := range seen {
		if ver < 0 {
			delete(p.versions, slug)
		} else {
			p.versions[slug] = ver
		}
		p.dirty[slug] = struct{}{}
		if !compaction {
			p.recent[slug] = struct{}{}
		}
	}
	if !compaction {
		p.smallBatches++
		r.batches.Add(1)
		r.refreshes.Add(int64(len(slugs)))
	}
	return nil
}

// manySource is a Source that can reread several slugs in one statement
// (the store can); a batch then costs one read instead of one per slug.
type manySource interface {
	LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error)
}

// readLatest rereads the slugs of a batch from the Source, all at once if
// it can, and returns the lookup applyLocked walks. p.mu is held, so the
// reads are still ordered after every earlier batch (invariant 3).
func (p *project) readLatest(slugs map[string]struct{}) (func(string) (memory.Version, error), error) {
	r := p.reg
	many, ok := r.src.(manySource)
	if !ok || len(slugs) < 2 {
		return func(slug string) (memory.Version, error) { return r.src.Latest(r.base, p.ref, slug) }, nil
	}
	vs, err := many.LatestMany(r.base, p.ref, slices.Collect(maps.Keys(slugs)))
	if err != nil {
		return nil, fmt.Errorf("read %d slugs in %s: %w", len(slugs), p.ref, err)
	}
	return func(slug string) (memory.Version, error) {
		if v, ok := vs[slug]; ok {
			return v, nil
		}
		return memory.Version{}, memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	}, nil
}

// compactFoldEvery is how many compactions re-index only the slugs touched
// since the previous one before a compaction folds every slug touched since
// the build into one segment again.
const compactFoldEvery = 8

// compactLocked bounds the number of segments. In-memory scorch runs no
// merger, and each refresh batch adds a segment that lives as long as one of
// its documents does; thousands of them make every update and search slow.
// Re-indexing every slug touched since the last compaction in one batch
// leaves all refresh segments since then without live documents, so scorch
// drops them; earlier compaction segments may keep live documents, so every
// compactFoldEvery-th compaction re-indexes every slug touched since the
// build instead (one segment again, or one per BatchBytes of their text).
// That bounds the segments at about CompactAfter + compactFoldEvery + 1
// (plus one per BatchBytes of large rounds) while a compaction costs the recently
// touched slugs, not the whole history. When the touched set grows past a
// quarter of the project, a full rebuild is cheaper per document and starts
// over. p.mu is held.
func (p *project) compactLocked() {
	r := p.reg
	p.smallBatches = 0
	r.compacts.Add(1)
	docs, _ := p.index().DocCount()
	if len(p.dirty) <= max(1000, int(docs/4)) {
		slugs := p.recent
		if p.partial++; p.partial > compactFoldEvery {
			slugs, p.partial = p.dirty, 0
		}
		p.recent = make(map[string]struct{})
		if err := p.applyLocked(slugs, true); err != nil {
			r.opts.Logger.Warn("search: compaction failed", "project", p.ref.String(), "err", err)
		}
		return
	}
	// Searches go on with the old index meanwhile; refreshes wait (p.mu).
	idx, versions, err := p.buildIndex()
	if err != nil {
		r.opts.Logger.Warn("search: rebuild failed", "project", p.ref.String(), "err", err)
		return
	}
	if old := p.setIndex(idx); old != nil {
		old.Close()
	}
	p.versions = versions
	p.dirty = make(map[string]struct{})
	p.recent = make(map[string]struct{})
	p.partial = 0
}

// close closes the index; the project is unusable afterwards.
func (p *project) close() error {
	p.mu.Lock()
	p.closed = true
	old := p.setIndex(nil)
	p.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}
