package search

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
	"munin/internal/search/index"
	"munin/internal/search/vector"
)

// Source is the database: each project's index takes its state from it, and
// a recall reads its hits from it. The store implements it. The index never
// trusts what a caller says was written; it always rereads it here.
type Source interface {
	// ScanLatestSeq and Changes build and catch up a project's index
	// (index.Source).
	index.Source
	// Latest returns the latest version of a slug, tombstones included
	// (Deleted set), or a *memory.Error with CodeNotFound if it never existed.
	Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error)
	// LatestMany is Latest for several slugs of a project in one read (the
	// store: one statement per chunk of slugs): a recall's hits cost one
	// read per project. Slugs that never existed are absent from the map.
	LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error)
}

// Options tune a Registry; the zero value is a good default.
type Options struct {
	// BuildBatch is how many documents one bleve batch takes while a project
	// index is built from the Source (default 1000).
	BuildBatch int
	// BatchBytes is how much text (slug, title, content, tags) one bleve
	// batch takes at most (default DefaultBatchBytes); a build or refresh
	// batch holding more is applied in parts. Scorch holds the analysis of a
	// whole batch at once, about 40 bytes per byte of text (see index/batch.go).
	BatchBytes int
	// Dir is the directory the project indexes live in, one per project
	// (IndexDir). Empty: a temporary directory removed by Close.
	Dir string
	// IdleClose is how long a project index may go unused before it is
	// closed, to be opened again on its next use (default DefaultIdleClose;
	// negative: never).
	IdleClose time.Duration
	// MaxOpen caps the project indexes open at once: past it the least
	// recently used are closed, as idle ones are (idle.go; default
	// DefaultMaxOpen; negative: no cap).
	MaxOpen int
	// PersistNap is how long an index keeps new segments in memory before
	// scorch writes them, as one (default DefaultPersistNap).
	PersistNap time.Duration
	// IndexRetry is how long a project whose index could not be opened,
	// built or written answers unavailable before the next use tries again
	// (default DefaultIndexRetry).
	IndexRetry time.Duration
	// IndexWait bounds how long a search waits for the refreshes queued
	// before it and for its project's index build (default
	// DefaultIndexWait). Past it the search answers unavailable with a retry
	// hint; the refreshes and the build go on.
	IndexWait time.Duration
	// Logger receives build and compaction failures (default slog.Default()).
	Logger *slog.Logger
	// NoCompounds and NoTypos turn off the recall's compound and typo
	// expansions (package rank): a recall then finds the query's
	// words and their forms only, as before they existed.
	NoCompounds, NoTypos bool
	// OnRefresh, when set, is told for each applied refresh batch how long
	// its oldest write waited until the index showed it (the refresh lag).
	OnRefresh func(time.Duration)
	// Meaning switches the meaning path of SearchProjects on (package
	// vector); the zero value leaves it off.
	Meaning MeaningOptions
}

// withDefaults fills in what the registry itself uses; BuildBatch,
// BatchBytes, PersistNap and IndexRetry only pass to each project's
// index.Config, which defaults them.
func (o Options) withDefaults() Options {
	if o.IdleClose == 0 {
		o.IdleClose = DefaultIdleClose
	}
	if o.MaxOpen == 0 {
		o.MaxOpen = DefaultMaxOpen
	}
	if o.IndexWait <= 0 {
		o.IndexWait = DefaultIndexWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Defaults of Options; those of a project's index are package index's.
const (
	DefaultIdleClose = 10 * time.Minute
	// DefaultMaxOpen: 1,000 projects of 100 entries recalled once leave
	// munin serve at 99 MiB RSS in one workspace and 140 MiB in 100 (at
	// 100 open: 104 and 145); a project that fell out reopens in 1–2.4 ms.
	DefaultMaxOpen    = 64
	DefaultIndexRetry = index.DefaultIndexRetry
	DefaultIndexWait  = index.DefaultIndexWait
	DefaultBatchBytes = index.DefaultBatchBytes
	DefaultPersistNap = index.DefaultPersistNap
)

// Registry holds one bleve index on disk per project (package index), each
// opened lazily on first use, caught up with or built from the Source, kept
// in step with it by Refresh and closed when idle (idle.go).
//
// Locking: the registry's own mutex only guards the map of projects and is never
// held while anything is built, read or indexed (invariant 4,
// docs/architecture.md#invariant-4-projects-do-not-block-each-other). Each
// project (index.Project) has its own lock that serializes its build, its refresh
// batches and its compactions, so every read from the Source is applied in the
// order it was made and the index cannot go back to an older state (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes). Searches do not take the
// project lock once the index is built.
type Registry struct {
	src     Source
	opts    Options
	dir     string // Options.Dir, or the temporary directory
	tempDir bool   // dir is removed by Close
	mapping *mapping.IndexMappingImpl
	// base is the context of builds and refresh batches: they run on behalf
	// of every waiting caller, so no single caller's cancellation may stop
	// them. Close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	projects map[memory.ProjectRef]*index.Project
	closed   bool

	meaning *vector.Meaning // nil: off

	counters        index.Counters // builds, opens and refresh batches of every project
	idleClosed      atomic.Int64
	capClosed       atomic.Int64
	vectorsUnloaded atomic.Int64
}

// Index is the contract of the service layer, restated here so that the
// compiler checks it without an import of the service package.
var _ interface {
	Queue(ref memory.ProjectRef, slug string) error
	Search(ctx context.Context, ref memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
	SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
} = (*Registry)(nil)

// NewRegistry returns an empty registry reading from src, with its indexes
// in opts.Dir (or a temporary directory). The application calls TuneProcess
// once before it; NewRegistry leaves process-wide settings alone. It panics if the built-in index
// mapping is invalid, which is a programming error. A directory that cannot
// be used fails the first use of each project, with the cause.
func NewRegistry(src Source, opts Options) *Registry {
	m, err := newMappingFunc()
	if err != nil {
		panic("search: invalid index mapping: " + err.Error())
	}
	opts = opts.withDefaults()
	dir, temp := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "munin-index-"); err != nil {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("munin-index-%d-%p", os.Getpid(), &dir))
		}
		temp = true
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Registry{
		src:      src,
		opts:     opts,
		dir:      dir,
		tempDir:  temp,
		mapping:  m,
		base:     base,
		cancel:   cancel,
		projects: make(map[memory.ProjectRef]*index.Project),
		meaning:  vector.New(base, opts.Meaning, opts.Logger),
	}
	go r.closeIdle()
	go r.capOpen()
	return r
}

// newMappingFunc is index.NewMapping; the memory benchmark swaps it for variants.
var newMappingFunc = index.NewMapping

// project returns the project's index, creating it (unbuilt) if new. It is
// cheap: the build happens later, under the project's lock only.
func (r *Registry) project(ref memory.ProjectRef) (*index.Project, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, index.ErrClosed
	}
	p := r.projects[ref]
	if p == nil {
		p = index.New(index.Config{
			Ref: ref, Path: IndexDir(r.dir, ref), Source: r.src, Mapping: r.mapping, Base: r.base,
			BuildBatch: r.opts.BuildBatch, BatchBytes: r.opts.BatchBytes, PersistNap: r.opts.PersistNap,
			IndexRetry: r.opts.IndexRetry, IndexWait: r.opts.IndexWait,
			Persist: !r.tempDir, // a temporary directory is removed anyway
			Logger:  r.opts.Logger, OnRefresh: r.opts.OnRefresh, Counters: &r.counters,
		})
		r.projects[ref] = p
	}
	return p, nil
}

// Queue makes the index agree with the database after a write of slug,
// without waiting: a batch reads every change of the project since the
// sequence the index reflects from the Source and updates those documents,
// or removes them for tombstones. Concurrent refreshes of a project are
// applied together as one batch; a closed index is left alone, since opening
// it catches up. Every
// Search that starts after Queue returned waits for that batch first, so a
// writer that queues before it answers gives read-your-writes to everyone,
// while it does not wait for the index itself.
func (r *Registry) Queue(ref memory.ProjectRef, slug string) error {
	p, err := r.project(ref)
	if err != nil {
		return err
	}
	p.Queue(slug)
	return nil
}

// Refresh is Queue, then waiting until the batch holding slug was applied;
// its error is the batch's. If ctx ends first, Refresh returns its error but
// the refresh is still applied.
func (r *Registry) Refresh(ctx context.Context, ref memory.ProjectRef, slug string) error {
	p, err := r.project(ref)
	if err != nil {
		return err
	}
	return p.Refresh(ctx, slug)
}

// Close shuts every index down. Builds in progress are cancelled; refreshes
// and searches after Close fail with CodeUnavailable.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	ps := make([]*index.Project, 0, len(r.projects))
	for _, p := range r.projects {
		ps = append(ps, p)
	}
	r.projects = nil
	r.mu.Unlock()

	r.cancel()
	// Each close waits until its index is on disk (up to a persister nap):
	// in parallel, a shutdown waits about one nap, not one per index.
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.Close)
	}
	wg.Wait()
	if r.tempDir {
		return os.RemoveAll(r.dir)
	}
	return nil
}

// Stats is a snapshot of the registry's counters, for tests and metrics.
type Stats struct {
	// Projects lists every known project with its document count (0 while closed).
	Projects map[memory.ProjectRef]ProjectStats
	// Builds counts project indexes built from the Source.
	Builds int64
	// Opened counts project indexes opened from disk and caught up.
	Opened int64
	// IdleClosed counts project indexes closed for being unused, and
	// VectorsUnloaded projects whose meaning vectors were dropped for it.
	IdleClosed, VectorsUnloaded int64
	// CapClosed counts project indexes closed because more than
	// Options.MaxOpen were open.
	CapClosed int64
	// Batches counts refresh batches applied (builds excluded).
	Batches int64
	// Refreshes counts slugs applied by refresh batches.
	Refreshes int64
}

// ProjectStats describes one project's index.
type ProjectStats struct {
	// Built tells whether the index is open.
	Built bool
	Docs  uint64
}

// Stats returns the current counters.
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	ps := make([]*index.Project, 0, len(r.projects))
	for _, p := range r.projects {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	s := Stats{
		Projects:        make(map[memory.ProjectRef]ProjectStats, len(ps)),
		Builds:          r.counters.Builds.Load(),
		Batches:         r.counters.Batches.Load(),
		Refreshes:       r.counters.Refreshes.Load(),
		Opened:          r.counters.Opened.Load(),
		IdleClosed:      r.idleClosed.Load(),
		CapClosed:       r.capClosed.Load(),
		VectorsUnloaded: r.vectorsUnloaded.Load(),
	}
	for _, p := range ps {
		var st ProjectStats
		if idx := p.Current(); idx != nil {
			st.Built = true
			st.Docs, _ = idx.DocCount()
		}
		s.Projects[p.Ref()] = st
	}
	return s
}

// Rebuild builds ref's index anew from the Source, replacing the one on
// disk, and returns how many documents it holds. `munin reindex` uses it
// while no server runs on the data directory.
func (r *Registry) Rebuild(ctx context.Context, ref memory.ProjectRef) (int, error) {
	p, err := r.project(ref)
	if err != nil {
		return 0, err
	}
	n, err := p.Rebuild()
	r.closeOverCap() // a rebuilt index is open without a search's open
	return n, err
}

// IndexRoot is the directory of every project's index in a data directory.
func IndexRoot(dataDir string) string { return index.Root(dataDir) }

// IndexDir is the directory of ref's index under root.
func IndexDir(root string, ref memory.ProjectRef) string { return index.Dir(root, ref) }

// IndexFormat names the mapping and analysis an index on disk was built
// with: the nodes of a cluster agree on it, so that no node trusts an index
// another would rebuild.
const IndexFormat = index.Format

// TuneProcess sets bleve's and zap's process-wide settings once, before the
// first index opens: the application calls it at start (see
// index.TuneProcess for the two settings and why they are per process, not
// per registry). It is idempotent.
func TuneProcess() { index.TuneProcess() }
