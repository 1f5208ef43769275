package index

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
)

// Project is one project's index and the machinery that keeps it in step
// with the Source: opened (or built) on first use, refreshed in rounds,
// waited for by searches, closed when idle or at shutdown.
type Project struct {
	cfg  Config
	ref  memory.ProjectRef
	path string // the index directory (disk.go)

	// mu is the project's lock. It serializes opening the index, every
	// refresh batch and closing it, and each of them reads the Source while
	// holding it: reads are applied in the order they were made, so the
	// index only ever moves forward. Searches never take it once the index
	// is open.
	mu sync.Mutex
	// mark is the Source's change the index reflects: every change of the
	// project up to it is applied (the index records it on disk).
	mark memory.Mark
	// versions is the highest version applied per slug (tombstones
	// included) since the index was opened. A read older than that is stale
	// and skipped: a second guard, beside the lock, that a forgotten or
	// replaced version never comes back.
	versions map[string]int
	// lastRound is the slug count of the last refresh batch (see gather).
	lastRound int
	closed    bool

	// swap guards idx. Searches hold it shared while they use the index, so
	// an index swapped out (dropped, closed) is closed only after them.
	swap sync.RWMutex
	idx  bleve.Index // nil until opened

	// lastUse is when a search or write last used the project (unix
	// nanoseconds); an index unused for the registry's idle time is closed
	// (CloseIfIdle).
	lastUse atomic.Int64
	// broken is set by the index's persister when it cannot write (disk.go).
	broken atomic.Pointer[bleve.Index]

	// qmu guards the queue of refreshes, the open attempt and the failure.
	// It is held only for a few instructions, never across I/O.
	qmu        sync.Mutex
	collecting *round   // refreshes waiting for the next batch
	applying   *round   // the batch being applied, nil between batches
	draining   bool     // a drain goroutine is running
	building   *attempt // an open started on behalf of searches
	failed     *failure // the last open failed: answer it until retryAt
}

// attempt is one open started for searches; waiters see its error.
type attempt struct {
	done    chan struct{}
	err     error
	started time.Time // for the retry hint of searches that gave up
}

// sourceError is a failure to read the Source. It says nothing about the
// index, so it is not remembered as a failure of it.
type sourceError struct{ error }

func (e sourceError) Unwrap() error { return e.error }

// failure is an index that could not be opened or built (or written): its
// searches answer unavailable with the cause instead of retrying the costly
// work on every call, until retryAt.
type failure struct {
	err     error
	retryAt time.Time
}

// New returns the project's index, not yet opened: the first search opens
// it from disk or builds it (disk.go), under the project's lock only.
func New(cfg Config) *Project {
	cfg = cfg.withDefaults()
	p := &Project{cfg: cfg, ref: cfg.Ref, path: cfg.Path}
	p.touch()
	watch(p)
	return p
}

// Ref is the project the index belongs to.
func (p *Project) Ref() memory.ProjectRef { return p.ref }

// touch records a use (see lastUse).
func (p *Project) touch() { p.lastUse.Store(time.Now().UnixNano()) }

// Current returns the open index or nil, without waiting for anything: for
// statistics and tests, never for a search (see Ready).
func (p *Project) Current() bleve.Index {
	p.swap.RLock()
	defer p.swap.RUnlock()
	return p.idx
}

// setIndex installs idx and returns the previous index. Because it takes swap
// exclusively, no search uses the previous index any more when it returns.
func (p *Project) setIndex(idx bleve.Index) bleve.Index {
	p.swap.Lock()
	defer p.swap.Unlock()
	old := p.idx
	p.idx = idx
	return old
}

// dropLocked closes the index, if open. The next use opens it again from
// disk and catches up from the Source, the only safe state after a failed
// batch. p.mu is held.
func (p *Project) dropLocked() {
	p.closeLocked(false)
}

// closeLocked closes the index, if open, first waiting (a while) until it is
// on disk if persist is set: an index closed when idle or at shutdown then
// opens without catching up. p.mu is held.
func (p *Project) closeLocked(persist bool) {
	if old := p.setIndex(nil); old != nil {
		if persist {
			WaitPersisted(old)
		}
		if err := old.Close(); err != nil {
			p.cfg.Logger.Warn("search: close index", "project", p.ref.String(), "err", err)
		}
	}
	p.versions = nil
}

// searchIndex returns the open index, opening it first if needed, and a
// release func the caller must call when it is done with the index.
func (p *Project) searchIndex(ctx context.Context) (bleve.Index, func(), error) {
	p.touch()
	for {
		p.swap.RLock()
		if p.idx != nil {
			return p.idx, p.swap.RUnlock, nil
		}
		p.swap.RUnlock()

		p.qmu.Lock()
		if f := p.failed; f != nil && time.Now().Before(f.retryAt) {
			p.qmu.Unlock()
			return nil, nil, f.answer(p.ref)
		}
		a := p.building
		if a == nil {
			a = &attempt{done: make(chan struct{}), started: time.Now()}
			p.building = a
			go p.openForSearch(a)
		}
		p.qmu.Unlock()

		if isClosed(a.done) {
			if a.err != nil {
				return nil, nil, a.err
			}
			continue
		}
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

// answer is what a search gets while the failure lasts.
func (f *failure) answer(ref memory.ProjectRef) error {
	wait := max(time.Second, time.Until(f.retryAt)).Round(time.Second)
	e := memory.Errorf(memory.CodeUnavailable, "search index of %s is unusable, retry in %d s: %v", ref, int(wait/time.Second), f.err)
	e.RetryAfter = wait
	return e
}

// openForSearch opens in its own goroutine so that a searcher giving up
// does not cancel an open other searchers (and refreshes) wait for.
func (p *Project) openForSearch(a *attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a.err = p.openLocked()
	p.qmu.Lock()
	p.building = nil
	p.qmu.Unlock()
	close(a.done)
}

// openLocked opens the index unless it is open: from disk, caught up with
// the Source, or rebuilt from it (disk.go). A failure is remembered for
// Config.IndexRetry and answered meanwhile. p.mu is held.
func (p *Project) openLocked() error {
	if p.closed {
		return ErrClosed
	}
	if p.Current() != nil {
		return nil
	}
	p.qmu.Lock()
	f := p.failed
	p.qmu.Unlock()
	if f != nil && time.Now().Before(f.retryAt) {
		return f.answer(p.ref)
	}
	idx, err := p.openOrBuild()
	var srcErr sourceError
	if errors.As(err, &srcErr) {
		return err // the database's trouble, not the index's: the next use retries
	}
	p.qmu.Lock()
	if err != nil && p.cfg.Base.Err() == nil {
		p.failed = &failure{err: err, retryAt: time.Now().Add(p.cfg.IndexRetry)}
		f = p.failed
	} else {
		p.failed = nil
	}
	p.qmu.Unlock()
	if err != nil {
		if p.cfg.Base.Err() != nil {
			return ErrClosed
		}
		p.cfg.Logger.Error("search: index unusable", "project", p.ref.String(), "retry_in", p.cfg.IndexRetry.String(), "err", err)
		return f.answer(p.ref)
	}
	p.setIndex(idx)
	return nil
}

// applyLocked applies every change of the project after p.mark to idx,
// read from the Source in one snapshot, in bleve batches of at most
// Config.BatchBytes of text (usually one); the last batch records the new
// mark. p.mu is held. On an error the index may hold part of the changes but
// still records the old mark, so catching up again repairs it.
func (p *Project) applyLocked(idx bleve.Index) error {
	b := newSizedBatch(idx, p.cfg.BatchBytes, 0)
	seen := make(map[string]int)
	var indexErr error
	mark, err := p.cfg.Source.Changes(p.cfg.Base, p.ref, p.mark, func(v memory.Version) error {
		switch {
		case v.Version < p.versions[v.Slug]:
			// Stale read: a newer version (or tombstone) is already applied.
		case v.Deleted:
			b.delete(v.Slug)
			seen[v.Slug] = v.Version
		default:
			if indexErr = b.index(v); indexErr != nil {
				return indexErr
			}
			seen[v.Slug] = v.Version
		}
		return nil
	})
	if err != nil {
		if indexErr == nil && !errors.Is(err, memory.ErrUnknownMark) {
			err = sourceError{err}
		}
		return fmt.Errorf("catch up %s from change %d: %w", p.ref, p.mark.Seq, err)
	}
	if mark != p.mark {
		b.setMark(mark)
	}
	if err := b.flush(); err != nil {
		return fmt.Errorf("apply batch to %s: %w", p.ref, err)
	}
	p.mark = mark
	for slug, ver := range seen {
		p.versions[slug] = ver
	}
	return nil
}

// Close closes the index, waiting (a while) until it is on disk unless
// Config.Persist is off; the project is unusable afterwards.
func (p *Project) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.closeLocked(p.cfg.Persist) // a temporary directory is removed anyway
	unwatch(p)
}
