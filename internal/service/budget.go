package service

import (
	"context"
	"sync"
	"time"

	"munin/internal/limit"
	"munin/internal/memory"
)

// budget counts writes and their content bytes per project in fixed
// clock-hour windows. The counts of a window are seeded from the audit log
// the first time the window is seen, so a restart does not hand out a fresh
// budget.
type budget struct {
	store    budgetSource
	fallback limits
	now      func() time.Time
	// freshLimits reads a project's limits on every reserve instead of once
	// per window: in a cluster they change on any node (control data, a
	// cache there), and only the workspace's owner counts.
	freshLimits bool

	mu       sync.Mutex
	projects map[memory.ProjectRef]*window
	// pace spreads each project's byte budget over its hour: a token bucket
	// that refills at the budget per hour and holds a minute's worth of it
	// (at least paceFloor). A project cannot write its whole hour's bytes in
	// one burst, whose indexing would take the CPU from every other project
	// for seconds; a team writing notes never notices.
	pace map[memory.ProjectRef]*limit.Bucket
	// paceFloor is the least a project may write at once: twice the largest
	// content, so that every write the content limit allows can pass.
	paceFloor int
	// opened counts forgetWorkspace calls: a window loaded from a workspace
	// file that was replaced meanwhile is not kept (see load).
	opened uint64
}

// budgetSource is what a budget reads: a project's limits (control data)
// and the writes its audit log holds (the workspace file).
type budgetSource interface {
	Project(ctx context.Context, ref memory.ProjectRef) (memory.ProjectInfo, error)
	WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (writes, bytes int, err error)
}

// reservation is a write taken from a project's budget: its hour's window
// (its bytes go back to the project's pace).
type reservation struct {
	w *window
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

func newBudget(store budgetSource, fallback limits, now func() time.Time) *budget {
	return &budget{store: store, fallback: fallback, now: now, projects: map[memory.ProjectRef]*window{},
		pace: map[memory.ProjectRef]*limit.Bucket{}, paceFloor: 2 * memory.DefaultMaxContent}
}

// reserve takes one write of size content bytes from the project's budget or
// fails with budget_exhausted (too_large for a write larger than the whole
// byte budget). It returns what it took, for release.
func (b *budget) reserve(ctx context.Context, ref memory.ProjectRef, size int) (*reservation, error) {
	now := b.now()
	var fresh limits
	if b.freshLimits {
		var err error
		if fresh, err = b.limitsOf(ctx, ref); err != nil {
			return nil, err
		}
	}
	w, err := b.lockWindow(ctx, ref, now.UTC().Truncate(time.Hour))
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	if b.freshLimits {
		w.limit = fresh
	}
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
	p := b.pacer(ref, w.limit.bytes, now)
	if wait, ok := p.Take(now, size); !ok || wait > 0 {
		err := memory.Errorf(memory.CodeBudgetExhausted,
			"project %s writes its %d bytes per hour faster than they refill (at most %d at once); retry in %s",
			ref, w.limit.bytes, b.paceBurst(w.limit.bytes), max(time.Second, wait.Round(time.Second)))
		err.RetryAfter = max(time.Second, wait)
		return nil, err
	}
	w.used++
	w.bytes += size
	return &reservation{w: w}, nil
}

// pacer is the project's byte pace for a budget of perHour bytes (made anew,
// with what is left of the old one, when the budget changes). The caller
// holds b.mu.
func (b *budget) pacer(ref memory.ProjectRef, perHour int, now time.Time) *limit.Bucket {
	perSecond := float64(perHour) / time.Hour.Seconds()
	old := b.pace[ref]
	if old != nil && old.PerSecond() == perSecond {
		return old
	}
	p := limit.NewBucket(perSecond, b.paceBurst(perHour))
	if old != nil {
		// What was spent stays spent: a budget changed back and forth
		// must not hand out a fresh burst each time.
		p = old.Changed(now, perSecond, b.paceBurst(perHour))
	}
	b.pace[ref] = p
	return p
}

// paceBurst is what a project with a budget of perHour bytes may write at
// once: a minute's worth, at least paceFloor.
func (b *budget) paceBurst(perHour int) int { return max(perHour/60, b.paceFloor) }

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
func (b *budget) release(ref memory.ProjectRef, from *reservation, size int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if from == nil {
		return
	}
	if p := b.pace[ref]; p != nil {
		p.Give(b.now(), size) // the current pace, even if the budget changed since
	}
	if w := b.projects[ref]; w == from.w && w.used > 0 {
		w.used--
		w.bytes = max(0, w.bytes-size)
	}
}

// limitsOf reads the project's limits, the server's where it sets none.
func (b *budget) limitsOf(ctx context.Context, ref memory.ProjectRef) (limits, error) {
	info, err := b.store.Project(ctx, ref)
	if err != nil {
		return limits{}, err
	}
	limit := limits{writes: info.WriteBudget, bytes: info.WriteBudgetBytes}
	if limit.writes <= 0 {
		limit.writes = b.fallback.writes
	}
	if limit.bytes <= 0 {
		limit.bytes = b.fallback.bytes
	}
	return limit, nil
}

// load reads the project's limits and the writes already made in this hour.
func (b *budget) load(ctx context.Context, ref memory.ProjectRef, hour time.Time) error {
	b.mu.Lock()
	opened := b.opened
	b.mu.Unlock()
	limit, err := b.limitsOf(ctx, ref)
	if err != nil {
		return err
	}
	used, bytes, err := b.store.WrittenSince(ctx, ref, hour)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Another caller may have loaded this window meanwhile; keep its count.
	if w := b.projects[ref]; w != nil && w.start.Equal(hour) {
		w.limit = limit
		return nil
	}
	// A workspace file was opened anew while this load counted: the count
	// may come from the file before it (lockWindow loads again).
	if b.opened != opened {
		return nil
	}
	b.projects[ref] = &window{start: hour, used: used, bytes: bytes, limit: limit}
	return nil
}

// refresh brings the project's window of hour up to date for reading: its
// limits reloaded if it is held, else loaded whole.
func (b *budget) refresh(ctx context.Context, ref memory.ProjectRef, hour time.Time) error {
	b.mu.Lock()
	w := b.projects[ref]
	held := w != nil && w.start.Equal(hour)
	b.mu.Unlock()
	if !held {
		return b.load(ctx, ref, hour)
	}
	limit, err := b.limitsOf(ctx, ref)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.projects[ref] == w {
		w.limit = limit
	}
	return nil
}

// forget drops the cached window so the next write reloads limit and count.
func (b *budget) forget(ref memory.ProjectRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.projects, ref)
}

// forgetWorkspace drops the cached windows of a workspace's projects: its
// file was opened anew — in a cluster, this node owns it again, and the
// owners in between wrote what no window here counted.
func (b *budget) forgetWorkspace(ws string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opened++
	for ref := range b.projects {
		if ref.Workspace == ws {
			delete(b.projects, ref)
		}
	}
}

// usage reports writes and content bytes used this hour and the limits; used
// for overview pages. It reloads the limits, which another process may have
// changed; the hour's counts it reads from the audit log only when no window
// holds them yet (every write here counts into the window, and an owner
// change drops it: forgetWorkspace), so a page does not scan the hour's
// writes each time.
func (b *budget) usage(ctx context.Context, ref memory.ProjectRef) (used window, err error) {
	hour := b.now().UTC().Truncate(time.Hour)
	if err := b.refresh(ctx, ref, hour); err != nil {
		return window{}, err
	}
	w, err := b.lockWindow(ctx, ref, hour)
	if err != nil {
		return window{}, err
	}
	defer b.mu.Unlock()
	return *w, nil
}
