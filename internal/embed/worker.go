package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/memory"
)

// Store is what the worker needs of storage; *store.Store implements it. The
// vectors table is the queue: what is missing is found again after a
// restart, an import or a model change, with nothing to keep in memory.
type Store interface {
	// ListProjects returns every project of every workspace.
	ListProjects(ctx context.Context) ([]memory.ProjectInfo, error)
	// MissingVectors returns up to limit latest live versions of workspace ws
	// without a vector for model.
	MissingVectors(ctx context.Context, ws, model string, limit int) ([]memory.VectorTask, error)
	// MissingProjectVectors is MissingVectors for one project.
	MissingProjectVectors(ctx context.Context, ref memory.ProjectRef, model string, limit int) ([]memory.VectorTask, error)
	// PendingVectors returns, of the named slugs of ref, the latest live
	// versions without a vector for model.
	PendingVectors(ctx context.Context, ref memory.ProjectRef, model string, slugs []string) ([]memory.VectorTask, error)
	// CountMissingVectors counts them.
	CountMissingVectors(ctx context.Context, ws, model string) (int, error)
	// PutVectors stores vectors of workspace ws through its writer.
	PutVectors(ctx context.Context, ws string, vs []memory.Vector) error
}

// Embedder turns texts into vectors; *Client implements it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// Backoff bounds: after a failed call the worker waits MinBackoff, doubling
// with each failure in a row up to MaxBackoff, then tries again.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 5 * time.Minute
)

// DefaultGather is how long a woken worker lets writes gather before its
// first call: a burst of writes becomes one full batch rather than many
// small calls, and a slug rewritten within it is embedded once. Meaning
// search lags by about this much more.
const DefaultGather = 200 * time.Millisecond

// maxPending bounds the written slugs a workspace remembers between two
// batches; past it the worker scans the workspace instead.
const maxPending = 10000

// maxSkipped bounds the versions per workspace the worker gives up on
// because the endpoint refuses their text for good (400, 413 or 422).
const maxSkipped = 1000

// Options configure a Worker. The zero value is usable.
type Options struct {
	// Logger receives failures (never the endpoint's key); nil discards them.
	Logger *slog.Logger
	// Batch is the most texts per call (default and cap memory.MaxEmbedBatch).
	Batch int
	// Gather is the wait after a wake-up before the first call (0:
	// DefaultGather, negative: none).
	Gather time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failure (defaults
	// DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
	// OnStored, when set, is called with every batch of vectors after it
	// was stored (the meaning index keeps itself current with it).
	OnStored func(vs []memory.Vector)
	// OnCall, when set, is told the outcome of every call to the endpoint
	// (the request and error metrics).
	OnCall func(texts int, err error)
}

// Stats counts what a worker did since it started.
type Stats struct {
	Calls    int64 // calls to the endpoint
	Errors   int64 // failed calls and failed stores
	Embedded int64 // vectors stored
	Skipped  int64 // versions given up on (refused for good by the endpoint)
}

// Worker keeps every live version of every workspace embedded, off the
// request path: one goroutine per workspace, woken by Written after a write,
// embedding in batches, retrying with backoff. A write never waits for it.
//
// Keeping up costs one key lookup per write: the worker embeds the slugs it
// was told about (Written). It scans a workspace for whatever is missing
// only when it cannot know: at Start (new since the last run, imported, or
// of another model), after a failure, and when too many writes piled up.
type Worker struct {
	st   Store
	emb  Embedder
	opts Options
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	spaces map[string]*space
	closed bool

	calls, errors, embedded, skipped atomic.Int64

	// onIdle, if set (tests only), is called each time a workspace's
	// goroutine found nothing missing and goes back to sleep.
	onIdle func(ws string)
	// sleep waits d or until ctx ends (false); tests record the pauses.
	sleep func(ctx context.Context, d time.Duration) bool
}

// NewWorker builds a worker; Start runs it.
func NewWorker(st Store, emb Embedder, opts Options) *Worker {
	if opts.Batch <= 0 || opts.Batch > memory.MaxEmbedBatch {
		opts.Batch = memory.MaxEmbedBatch
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.Gather == 0 {
		opts.Gather = DefaultGather
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{st: st, emb: emb, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, spaces: map[string]*space{}, sleep: sleep}
}

// Model is the model the worker embeds with.
func (w *Worker) Model() string { return w.emb.Model() }

// Start wakes a goroutine for every workspace that has a project, so what is
// missing (new since the last run, imported, or of another model) is
// embedded in the background.
func (w *Worker) Start(ctx context.Context) error {
	ps, err := w.st.ListProjects(ctx)
	if err != nil {
		return fmt.Errorf("start embedding: %w", err)
	}
	for _, p := range ps {
		w.Notify(p.Ref.Workspace)
	}
	return nil
}

// Notify makes the worker scan workspace ws for everything missing.
func (w *Worker) Notify(ws string) {
	sp := w.space(ws)
	if sp == nil {
		return
	}
	sp.setScan(true)
	sp.wakeUp()
}

// Written tells the worker that slug of ref got a new version (or was
// forgotten). It never blocks: the remember that calls it waits for nothing.
func (w *Worker) Written(ref memory.ProjectRef, slug string) {
	sp := w.space(ref.Workspace)
	if sp == nil {
		return
	}
	sp.mu.Lock()
	if sp.npend >= maxPending {
		sp.scan = true // too many to remember one by one: scan instead
	} else {
		slugs := sp.pending[ref]
		if slugs == nil {
			slugs = map[string]struct{}{}
			sp.pending[ref] = slugs
		}
		if _, ok := slugs[slug]; !ok {
			slugs[slug] = struct{}{}
			sp.npend++
		}
	}
	sp.mu.Unlock()
	sp.wakeUp()
}

// space returns the state of ws, starting its goroutine on first use (nil
// after Close).
func (w *Worker) space(ws string) *space {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	sp, ok := w.spaces[ws]
	if !ok {
		sp = newSpace(ws)
		w.spaces[ws] = sp
		w.wg.Add(1)
		go w.run(sp)
	}
	return sp
}

// Close stops the goroutines (a call in flight is cancelled) and waits for them.
func (w *Worker) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// Stats returns the counters.
func (w *Worker) Stats() Stats {
	return Stats{Calls: w.calls.Load(), Errors: w.errors.Load(), Embedded: w.embedded.Load(), Skipped: w.skipped.Load()}
}

// Backlog counts the live versions waiting for a vector in all workspaces
// the worker knows, exactly, from the database (one pass over each
// workspace's entries: for a metric scraped every few seconds, not per request).
func (w *Worker) Backlog(ctx context.Context) (int, error) {
	w.mu.Lock()
	names := make([]string, 0, len(w.spaces))
	for name := range w.spaces {
		names = append(names, name)
	}
	w.mu.Unlock()
	total := 0
	for _, name := range names {
		n, err := w.st.CountMissingVectors(ctx, name, w.emb.Model())
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

func (w *Worker) run(sp *space) {
	defer w.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-sp.wake:
		}
		if w.opts.Gather > 0 {
			t := time.NewTimer(w.opts.Gather)
			select {
			case <-w.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		w.drain(sp)
	}
}

// backoff is the pause after the given number of failures in a row (≥ 1):
// MinBackoff, doubling with each further failure, at most MaxBackoff. The
// worker and Fill both use it.
func (o Options) backoff(failures int) time.Duration {
	d := o.MinBackoff
	for i := 1; i < failures && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

// drain embeds what is pending (or, scanning, missing) in sp until nothing
// is, retrying failures after a growing pause.
func (w *Worker) drain(sp *space) {
	fails := 0
	for w.ctx.Err() == nil {
		n, err := w.step(w.ctx, sp)
		if err != nil {
			sp.setScan(true) // the failed batch's slugs are found again by a scan
		}
		if err == nil && n == 0 {
			if w.onIdle != nil {
				w.onIdle(sp.name)
			}
			return
		}
		if err == nil {
			fails = 0
			continue
		}
		if w.ctx.Err() != nil {
			return
		}
		fails++
		pause := w.opts.backoff(fails)
		w.log.Warn("embedding failed; will retry", "workspace", sp.name, "model", w.emb.Model(), "retry_in", pause, "err", err)
		if !w.sleep(w.ctx, pause) {
			return
		}
	}
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// step embeds and stores one batch of sp's missing vectors and returns how
// many it stored (0 and no error: nothing is missing).
func (w *Worker) step(ctx context.Context, sp *space) (int, error) {
	tasks, err := w.next(ctx, sp)
	if err != nil || len(tasks) == 0 {
		return 0, err
	}
	vecs, err := w.embed(ctx, tasks)
	var se *StatusError
	if errors.As(err, &se) && se.RefusesText() {
		// The endpoint refuses these texts and will again: find the ones it
		// refuses alone and give up on them, so they do not block the rest.
		return w.isolate(ctx, sp, tasks)
	}
	if err != nil {
		return 0, err
	}
	return w.store(ctx, sp, tasks, vecs)
}

// embed makes one call and counts it.
func (w *Worker) embed(ctx context.Context, tasks []memory.VectorTask) ([][]float32, error) {
	texts := make([]string, len(tasks))
	for i, t := range tasks {
		texts[i] = t.Text
	}
	vecs, err := w.emb.Embed(ctx, texts)
	w.calls.Add(1)
	if err != nil && ctx.Err() == nil {
		w.errors.Add(1)
	}
	if w.opts.OnCall != nil && ctx.Err() == nil {
		w.opts.OnCall(len(texts), err)
	}
	return vecs, err
}

// store saves one batch and tells OnStored.
func (w *Worker) store(ctx context.Context, sp *space, tasks []memory.VectorTask, vecs [][]float32) (int, error) {
	vs := make([]memory.Vector, len(tasks))
	for i, t := range tasks {
		vs[i] = memory.Vector{Project: t.Project, Slug: t.Slug, Version: t.Version, Model: w.emb.Model(), Values: vecs[i]}
	}
	if err := w.st.PutVectors(ctx, sp.name, vs); err != nil {
		w.errors.Add(1)
		return 0, fmt.Errorf("store vectors: %w", err)
	}
	w.embedded.Add(int64(len(vs)))
	if w.opts.OnStored != nil {
		w.opts.OnStored(vs)
	}
	return len(vs), nil
}

// isolate embeds tasks one by one after the endpoint refused their batch
// for good; a text refused alone is skipped (logged and counted) until the
// server restarts or the entry gets a new version.
func (w *Worker) isolate(ctx context.Context, sp *space, tasks []memory.VectorTask) (int, error) {
	done := 0
	for _, t := range tasks {
		vecs, err := w.embed(ctx, []memory.VectorTask{t})
		var se *StatusError
		switch {
		case errors.As(err, &se) && se.RefusesText():
			if len(sp.skip) >= maxSkipped {
				return done, err // keep retrying rather than grow without bound
			}
			sp.skip[taskKey(t)] = struct{}{}
			w.skipped.Add(1)
			w.log.Warn("embedding endpoint refuses an entry; skipped until it changes or the server restarts",
				"project", t.Project.String(), "slug", t.Slug, "version", t.Version, "err", err)
		case err != nil:
			return done, err
		default:
			n, err := w.store(ctx, sp, []memory.VectorTask{t}, vecs)
			if err != nil {
				return done, err
			}
			done += n
		}
	}
	if done == 0 {
		// Only skipped ones: report progress so the drain goes on.
		return w.step(ctx, sp)
	}
	return done, nil
}

// next returns the next batch: of the pending slugs first, else (when a
// scan is due) of whatever is missing; none when neither has anything.
func (w *Worker) next(ctx context.Context, sp *space) ([]memory.VectorTask, error) {
	for {
		ref, slugs := sp.take(w.opts.Batch)
		if len(slugs) == 0 {
			break
		}
		tasks, err := w.st.PendingVectors(ctx, ref, w.emb.Model(), slugs)
		if err != nil {
			return nil, fmt.Errorf("read pending vectors: %w", err)
		}
		if tasks = w.unskipped(sp, tasks); len(tasks) > 0 {
			return tasks, nil
		}
	}
	if !sp.needScan() {
		return nil, nil
	}
	var tasks []memory.VectorTask
	var err error
	if sp.project != "" {
		tasks, err = w.st.MissingProjectVectors(ctx, memory.ProjectRef{Workspace: sp.name, Project: sp.project}, w.emb.Model(), w.opts.Batch+len(sp.skip))
	} else {
		tasks, err = w.st.MissingVectors(ctx, sp.name, w.emb.Model(), w.opts.Batch+len(sp.skip))
	}
	if err != nil {
		return nil, fmt.Errorf("read missing vectors: %w", err)
	}
	if tasks = w.unskipped(sp, tasks); len(tasks) == 0 {
		sp.setScan(false)
	}
	return tasks, nil
}

func (w *Worker) unskipped(sp *space, tasks []memory.VectorTask) []memory.VectorTask {
	if len(sp.skip) > 0 {
		out := tasks[:0]
		for _, t := range tasks {
			if _, ok := sp.skip[taskKey(t)]; !ok {
				out = append(out, t)
			}
		}
		tasks = out
	}
	return tasks[:min(len(tasks), w.opts.Batch)]
}

func taskKey(t memory.VectorTask) string {
	return fmt.Sprintf("%s\x00%s\x00%d", t.Project.Project, t.Slug, t.Version)
}
