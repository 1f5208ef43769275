package index

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"

	"munin/internal/memory"
)

// Source is what one project's index reads from the database: the latest live
// versions for a build, the changes after a mark for a catch-up. The store
// implements it. The index never trusts what a caller says was written; it always
// rereads it here (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes).
type Source interface {
	// ScanLatestSeq calls fn for the latest live version of every entry of
	// the project, in one snapshot, and returns the mark of the last change
	// in that snapshot; an error from fn stops the scan and is returned.
	ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error)
	// Changes calls fn for the latest version, tombstones included, of every
	// slug of the project changed after the change since, in one snapshot,
	// and returns that snapshot's last mark; memory.ErrUnknownMark if the
	// database does not hold since (a restored backup).
	Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error)
}

// Config is what one project's index is built from. The search registry
// fills it from its Options; nothing in it points back to the registry.
type Config struct {
	// Ref is the project; Path the directory of its index (Dir).
	Ref  memory.ProjectRef
	Path string
	// Source is the database the index is built from and caught up with.
	Source Source
	// Mapping is the index mapping (NewMapping); shared, read-only.
	Mapping *mapping.IndexMappingImpl
	// Base is the context of builds and refresh batches: they run on behalf
	// of every waiting caller, so no single caller's cancellation may stop
	// them. When it ends, the index shuts down (default: never).
	Base context.Context
	// BuildBatch is how many documents one bleve batch takes while the
	// index is built (default 1000).
	BuildBatch int
	// BatchBytes is how much text one bleve batch takes at most (default
	// DefaultBatchBytes; see batch.go).
	BatchBytes int
	// PersistNap is how long scorch keeps new segments in memory before it
	// writes them, as one (default DefaultPersistNap).
	PersistNap time.Duration
	// IndexRetry is how long an index that could not be opened, built or
	// written answers unavailable before the next use tries again (default
	// DefaultIndexRetry).
	IndexRetry time.Duration
	// IndexWait bounds how long a search waits for the refreshes queued
	// before it and for the build (default DefaultIndexWait).
	IndexWait time.Duration
	// Persist makes Close wait (a while) until the index is on disk, so the
	// next open need not catch up; off for a directory removed anyway.
	Persist bool
	// Logger receives build and write failures (default slog.Default()).
	Logger *slog.Logger
	// OnRefresh, when set, is told for each applied refresh batch how long
	// its oldest write waited until the index showed it (the refresh lag).
	OnRefresh func(time.Duration)
	// Counters, when set, is shared by the indexes of a registry (its Stats).
	Counters *Counters
}

// DefaultIndexRetry is the default of Config.IndexRetry.
const DefaultIndexRetry = 10 * time.Second

func (c Config) withDefaults() Config {
	if c.Base == nil {
		c.Base = context.Background()
	}
	if c.BuildBatch <= 0 {
		c.BuildBatch = 1000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.PersistNap <= 0 {
		c.PersistNap = DefaultPersistNap
	}
	if c.IndexRetry <= 0 {
		c.IndexRetry = DefaultIndexRetry
	}
	if c.IndexWait <= 0 {
		c.IndexWait = DefaultIndexWait
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Counters == nil {
		c.Counters = new(Counters)
	}
	return c
}

// Counters count what the indexes of a registry did, for its Stats.
type Counters struct {
	// Builds counts indexes built from the Source; Opened those opened
	// from disk and caught up.
	Builds, Opened atomic.Int64
	// Batches counts refresh batches applied (builds excluded), Refreshes
	// the slugs they applied.
	Batches, Refreshes atomic.Int64
}

// ErrClosed is what a use of a closed index (or registry) answers.
var ErrClosed = memory.Errorf(memory.CodeUnavailable, "search index is shut down")
