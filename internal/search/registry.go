package search

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
)

// Source is where the index takes its state from: the database. The store
// implements it. The index never trusts what a caller says was written; it
// always rereads it here.
type Source interface {
	// Latest returns the latest version of a slug, tombstones included
	// (Deleted set), or a *memory.Error with CodeNotFound if it never existed.
	Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error)
	// ScanLatest calls fn for the latest live version of every entry of the
	// project; an error from fn stops the scan and is returned.
	ScanLatest(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) error
	// Get returns one version of a slug (and the slug's latest version
	// number); a search reads its hits with it.
	Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error)
}

// Options tune a Registry; the zero value is a good default.
type Options struct {
	// BuildBatch is how many documents one bleve batch takes while a project
	// index is built from the Source (default 1000).
	BuildBatch int
	// BatchBytes is how much text (slug, title, content, tags) one bleve
	// batch takes at most (default DefaultBatchBytes); a build or refresh
	// batch holding more is applied in parts. Scorch holds the analysis of a
	// whole batch at once, about 40 bytes per byte of text (see batch.go).
	BatchBytes int
	// CompactAfter is how many refresh batches a project index takes before
	// they are folded into one segment (default 100). In-memory scorch has no
	// background merger, so every batch stays a segment of its own and search
	// and update cost grow with their number; see compact.
	CompactAfter int
	// IndexWait bounds how long a search waits for the refreshes queued
	// before it and for its project's index build (default
	// DefaultIndexWait). Past it the search answers unavailable with a retry
	// hint; the refreshes and the build go on.
	IndexWait time.Duration
	// Logger receives build and compaction failures (default slog.Default()).
	Logger *slog.Logger
	// NoCompounds and NoTypos turn off the recall's compound and typo
	// expansions (compound.go, fuzzy.go): a recall then finds the query's
	// words and their forms only, as before they existed.
	NoCompounds, NoTypos bool
	// OnRefresh, when set, is told for each applied refresh batch how long
	// its oldest write waited until the index showed it (the refresh lag).
	OnRefresh func(time.Duration)
	// Meaning switches the meaning path of SearchProjects on (see
	// meaning.go); the zero value leaves it off.
	Meaning MeaningOptions
}

func (o Options) withDefaults() Options {
	if o.BuildBatch <= 0 {
		o.BuildBatch = 1000
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.CompactAfter <= 0 {
		o.CompactAfter = 100
	}
	if o.IndexWait <= 0 {
		o.IndexWait = DefaultIndexWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Registry holds one in-memory bleve index per project, each built lazily
// from the Source on first use and kept in step with it by Refresh.
//
// Locking: the registry's own mutex only guards the map of projects and is
// never held while anything is built, read or indexed (invariant 4). Each
// project has its own lock that serializes its build, its refresh batches and
// its compactions, so every read from the Source is applied in the order it
// was made and the index cannot go back to an older state (invariant 3).
// Searches do not take the project lock once the index is built.
type Registry struct {
	src     Source
	opts    Options
	mapping *mapping.IndexMappingImpl
	// base is the context of builds and refresh batches: they run on behalf
	// of every waiting caller, so no single caller's cancellation may stop
	// them. Close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	projects map[memory.ProjectRef]*project
	closed   bool

	meaning *meaning // nil: off

	builds    atomic.Int64
	batches   atomic.Int64
	refreshes atomic.Int64
	compacts  atomic.Int64
}

// Index is the contract of the service layer, restated here so that the
// compiler checks it without an import of the service package.
var _ interface {
	Queue(ref memory.ProjectRef, slug string) error
	Search(ctx context.Context, ref memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
	SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
} = (*Registry)(nil)

// NewRegistry returns an empty registry reading from src. It panics if the
// built-in index mapping is invalid, which is a programming error.
func NewRegistry(src Source, opts Options) *Registry {
	m, err := newMappingFunc()
	if err != nil {
		panic("search: invalid index mapping: " + err.Error())
	}
	limitAnalysis()
	base, cancel := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	return &Registry{
		src:      src,
		opts:     opts,
		mapping:  m,
		base:     base,
		cancel:   cancel,
		projects: make(map[memory.ProjectRef]*project),
		meaning:  newMeaning(base, opts.Meaning, opts.Logger),
	}
}

// newMappingFunc is newMapping; the memory benchmark swaps it for variants.
var newMappingFunc = newMapping

var errClosed = memory.Errorf(memory.CodeUnavailable, "search index is shut down")

// project returns the project's state, creating it (unbuilt) if new. It is
// cheap: the build happens later, under the project's lock only.
func (r *Registry) project(ref memory.ProjectRef) (*project, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	p := r.projects[ref]
	if p == nil {
		p = newProject(r, ref)
		r.projects[ref] = p
	}
	return p, nil
}

// Queue makes the index agree with the database for one slug, without
// waiting: a batch rereads the latest version from the Source and updates the
// document, or removes it for a tombstone or a slug that does not exist.
// Concurrent refreshes of a project are applied together as one batch. Every
// Search that starts after Queue returned waits for that batch first, so a
// writer that queues before it answers gives read-your-writes to everyone,
// while it does not wait for the index itself.
func (r *Registry) Queue(ref memory.ProjectRef, slug string) error {
	p, err := r.project(ref)
	if err != nil {
		return err
	}
	p.queue(slug)
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
	return p.refresh(ctx, slug)
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
	ps := make([]*project, 0, len(r.projects))
	for _, p := range r.projects {
		ps = append(ps, p)
	}
	r.projects = nil
	r.mu.Unlock()

	r.cancel()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}

// Stats is a snapshot of the registry's counters, for tests and metrics.
type Stats struct {
	// Projects lists every known project with its document count (0 while unbuilt).
	Projects map[memory.ProjectRef]ProjectStats
	// Builds counts project indexes built from the Source (compaction rebuilds included).
	Builds int64
	// Batches counts refresh batches applied (builds and compactions excluded).
	Batches int64
	// Refreshes counts slugs applied by refresh batches.
	Refreshes int64
	// Compactions counts folds of refresh segments.
	Compactions int64
}

// ProjectStats describes one project's index.
type ProjectStats struct {
	Built bool
	Docs  uint64
}

// Stats returns the current counters.
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	ps := make([]*project, 0, len(r.projects))
	for _, p := range r.projects {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	s := Stats{
		Projects:    make(map[memory.ProjectRef]ProjectStats, len(ps)),
		Builds:      r.builds.Load(),
		Batches:     r.batches.Load(),
		Refreshes:   r.refreshes.Load(),
		Compactions: r.compacts.Load(),
	}
	for _, p := range ps {
		var st ProjectStats
		if idx := p.index(); idx != nil {
			st.Built = true
			st.Docs, _ = idx.DocCount()
		}
		s.Projects[p.ref] = st
	}
	return s
}
