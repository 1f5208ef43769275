package service

import (
	"context"
	"sync"
	"time"

	"munin/internal/memory"
)

// budget counts writes and their content bytes per project in fixed
// clock-hour windows. The counts of a window are seeded from the audit log
// the first time the window is seen, so a restart does not hand out a fresh
// budget.
type budget struct {
	store    Store
	fallback limits
	now      func() time.Time

	mu       sync.Mutex
	projects map[memory.ProjectRef]*window
}

// limits are a project's allowances per hour.
type limits struct {
	writes, bytes int
}

type window struct {
	start time.Time // the hour this window counts
	used  int
	bytes int // content bytes used
	limit limits
}

func newBudget(store Store, fallback limits, now func() time.Time) *budget {
	return &budget{store: store, fallback: fallback, now: now, projects: map[memory.ProjectRef]*window{}}
}

// reserve takes one write of size content bytes from the project's budget or
// fails with budget_exhausted (too_large for a write larger than the whole
// byte budget). It returns the window it took the write from, for release.
func (b *budget) reserve(ctx context.Context, ref memory.ProjectRef, size int) (*window, error) {
	w, err := b.lockWindow(ctx, ref, b.now().UTC().Truncate(time.Hour))
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	if size > w.limit.bytes {
		return nil, memory.Errorf(memory.CodeTooLarge,
			"content of %d bytes is more than project %s may write in an hour (%d bytes)", size, ref, w.limit.bytes)
	}
	if w.used >= w.limit.writes {
		return nil, b.exhausted(w, "project %s used its %d writes this hour", ref, w.limit.writes)
	}
	if w.bytes+size > w.limit.bytes {
		return nil, b.exhausted(w, "project %s wrote %d of its %d bytes this hour and this write has %d",
			ref, w.bytes, w.limit.bytes, size)
	}
	w.used++
	w.bytes += size
	return w, nil
}

// exhausted is budget_exhausted with what ran out and when the window resets.
func (b *budget) exhausted(w *window, format string, args ...any) *memory.Error {
	reset := w.start.Add(time.Hour)
	wait := reset.Sub(b.now()).Round(time.Second)
	err := memory.Errorf(memory.CodeBudgetExhausted, format, args...)
	err.Message += "; the budget resets at " + reset.Format(time.RFC3339) + " (in " + wait.String() + ")"
	err.RetryAfter = wait
	return err
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

// release gives back a reserved write of size bytes that did not happen.
// Only to the window it came from: a new hour, or a window reloaded from the
// audit log after a budget change, never counted it.
func (b *budget) release(ref memory.ProjectRef, from *window, size int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.projects[ref]; w == from && w.used > 0 {
		w.used--
		w.bytes = max(0, w.bytes-size)
	}
}

// load reads the project's limits and the writes already made in this hour.
func (b *budget) load(ctx context.Context, ref memory.ProjectRef, hour time.Time) error {
	info, err := b.store.Project(ctx, ref)
	if err != nil {
		return err
	}
	used, bytes, err := b.store.WrittenSince(ctx, ref, hour)
	if err != nil {
		return err
	}
	limit := limits{writes: info.WriteBudget, bytes: info.WriteBudgetBytes}
	if limit.writes <= 0 {
		limit.writes = b.fallback.writes
	}
	if limit.bytes <= 0 {
		limit.bytes = b.fallback.bytes
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Another caller may have loaded this window meanwhile; keep its count.
	if w := b.projects[ref]; w != nil && w.start.Equal(hour) {
		w.limit = limit
		return nil
	}
	b.projects[ref] = &window{start: hour, used: used, bytes: bytes, limit: limit}
	return nil
}

// forget drops the cached window so the next write reloads limit and count.
func (b *budget) forget(ref memory.ProjectRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.projects, ref)
}

// usage reports writes and content bytes used this hour and the limits; used
// for overview pages. It reloads the limits, which another process may have
// changed.
func (b *budget) usage(ctx context.Context, ref memory.ProjectRef) (used window, err error) {
	hour := b.now().UTC().Truncate(time.Hour)
	if err := b.load(ctx, ref, hour); err != nil {
		return window{}, err
	}
	w, err := b.lockWindow(ctx, ref, hour)
	if err != nil {
		return window{}, err
	}
	defer b.mu.Unlock()
	return *w, nil
}
