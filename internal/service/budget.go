package service

import (
	"context"
	"sync"
	"time"

	"munin/internal/memory"
)

// budget counts writes per project in fixed clock-hour windows. The count of
// a window is seeded from the audit log the first time the window is seen, so
// a restart does not hand out a fresh budget.
type budget struct {
	store    Store
	fallback int
	now      func() time.Time

	mu       sync.Mutex
	projects map[memory.ProjectRef]*window
}

type window struct {
	start time.Time // the hour this window counts
	used  int
	limit int // 0: not loaded yet
}

func newBudget(store Store, fallback int, now func() time.Time) *budget {
	return &budget{store: store, fallback: fallback, now: now, projects: map[memory.ProjectRef]*window{}}
}

// reserve takes one write from the project's budget or fails with
// budget_exhausted. It returns the window it took the write from, for release.
func (b *budget) reserve(ctx context.Context, ref memory.ProjectRef) (*window, error) {
	w, err := b.lockWindow(ctx, ref, b.now().UTC().Truncate(time.Hour))
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	if w.used >= w.limit {
		reset := w.start.Add(time.Hour)
		wait := reset.Sub(b.now()).Round(time.Second)
		err := memory.Errorf(memory.CodeBudgetExhausted,
			"project %s used its %d writes this hour; the budget resets at %s (in %s)",
			ref, w.limit, reset.Format(time.RFC3339), wait)
		err.RetryAfter = wait
		return nil, err
	}
	w.used++
	return w, nil
}

// lockWindow returns the project's window for hour with b.mu held, loading
// it first if it is missing or of another hour. It checks again after each
// load, because forget (a budget change) may drop the window in between.
func (b *budget) lockWindow(ctx context.Context, ref memory.ProjectRef, hour time.Time) (*window, error) {
	for {
		b.mu.Lock()
		if w := b.projects[ref]; w != nil && w.start.Equal(hour) {
			return w, nil
		}
		b.mu.Unlock()
		if err := b.load(ctx, ref, hour); err != nil {
			return nil, err
		}
	}
}

// release gives back a reserved write that did not happen. Only to the
// window it came from: a new hour, or a window reloaded from the audit log
// after a budget change, never counted it.
func (b *budget) release(ref memory.ProjectRef, from *window) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.projects[ref]; w == from && w.used > 0 {
		w.used--
	}
}

// load reads the project's limit and the writes already made in this hour.
func (b *budget) load(ctx context.Context, ref memory.ProjectRef, hour time.Time) error {
	info, err := b.store.Project(ctx, ref)
	if err != nil {
		return err
	}
	used, err := b.store.CountWritesSince(ctx, ref, hour)
	if err != nil {
		return err
	}
	limit := info.WriteBudget
	if limit <= 0 {
		limit = b.fallback
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Another caller may have loaded this window meanwhile; keep its count.
	if w := b.projects[ref]; w != nil && w.start.Equal(hour) {
		w.limit = limit
		return nil
	}
	b.projects[ref] = &window{start: hour, used: used, limit: limit}
	return nil
}

// forget drops the cached window so the next write reloads limit and count.
func (b *budget) forget(ref memory.ProjectRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.projects, ref)
}

// usage reports writes used this hour and the limit; used for overview
// pages. It reloads the limit, which another process may have changed.
func (b *budget) usage(ctx context.Context, ref memory.ProjectRef) (used, limit int, err error) {
	hour := b.now().UTC().Truncate(time.Hour)
	if err := b.load(ctx, ref, hour); err != nil {
		return 0, 0, err
	}
	w, err := b.lockWindow(ctx, ref, hour)
	if err != nil {
		return 0, 0, err
	}
	defer b.mu.Unlock()
	return w.used, w.limit, nil
}
