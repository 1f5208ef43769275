// Package service holds Munin's use cases. Every transport (MCP, REST, web)
// calls it and nothing below it: key → role → write budget → store → index
// refresh → audit for writes; index → search log for recall.
package service

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"munin/internal/changehub"
	"munin/internal/memory"
)

// Options configure a Service. The zero value is usable: defaults apply.
type Options struct {
	// Ready, when set, is asked by Ready besides the store (a cluster node
	// is not ready once it lost its lease).
	Ready func(ctx context.Context) error
	// DefaultWriteBudget is the writes per project per hour when the project
	// sets none (default 1000).
	DefaultWriteBudget int
	// DefaultWriteBudgetBytes is the content bytes per project per hour when
	// the project sets none (default memory.DefaultWriteBudgetBytes).
	DefaultWriteBudgetBytes int
	// BudgetOff switches the write budget off for the whole server (load tests).
	BudgetOff bool
	// BudgetAtOwner, when set, leaves the write budget to the owners of the
	// workspaces (a cluster node: each owner wraps the store of its
	// workspaces in NewOwnerBudgeted) and asks it for a project's usage. Without
	// it the service wraps its store in NewBudgeted itself.
	BudgetAtOwner UsageReader
	// MaxContent is the largest content in bytes (default memory.DefaultMaxContent).
	MaxContent int
	// SearchLogOff stops writing the search log (to measure what it costs).
	SearchLogOff bool
	// SimilarOff switches the duplicate hint of remember off (similar.go):
	// it costs a new slug's remember a keyword search.
	SimilarOff bool
	// SearchLogDays keeps search-log rows this many days (0: DefaultSearchLogDays,
	// negative: no age limit); SearchLogRows keeps this many newest rows per
	// project (0: DefaultSearchLogRows, negative: no row limit).
	SearchLogDays, SearchLogRows int
	// RecallRate is the recalls per second one key may make, with bursts of
	// RecallBurst (0: DefaultRecallRate and DefaultRecallBurst, negative rate:
	// no limit); RecallConcurrency is how many of a key's recalls may run at
	// once (0: DefaultRecallConcurrency, negative: no limit).
	RecallRate        float64
	RecallBurst       int
	RecallConcurrency int
	// ProjectRecallConcurrency is how many recalls and heavy pages of one
	// project (all its keys) run at once (0: ProjectRecallRunning(),
	// negative: no limit; also none when RecallConcurrency is negative).
	ProjectRecallConcurrency int
	// FeedPoll is how often a watched workspace's feed is read without a
	// commit signal (Watch): a cluster node hears no commit of the
	// workspaces other nodes own. 0: never (a single server).
	FeedPoll time.Duration
	// OAuth, when set, signs OAuth clients in (oauth.go); nil: OAuth off.
	OAuth *OAuthOptions
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests move it.
	Now func() time.Time
	// OnBudgetRejected, when set, is called for every write refused by the
	// write budget (the budget-rejection metric).
	OnBudgetRejected func()
	// EmbedBacklog, when set (embeddings on), counts a project's live
	// entries waiting for their vector; project summaries show it.
	EmbedBacklog func(ctx context.Context, ref memory.ProjectRef) (int, error)
	// EmbedHealth, when set (embeddings on), tells whether the embedding
	// endpoint is failing and why, in a fixed sentence fit for anyone who
	// reads a project (no URL, answer or key): project summaries show it,
	// so a person sees that meaning search is paused instead of silently
	// missing entries.
	EmbedHealth func() (failing bool, reason string)
}

// Service is the one place where Munin's rules live.
type Service struct {
	store       Store
	index       Index
	opts        Options
	log         *slog.Logger
	budget      UsageReader // what a project used of its budget
	budgeted    *Budgeted   // a single server's budget (nil with BudgetAtOwner)
	slog        *searchLog
	recallLimit *recallLimiter
	keyLimit    keyLimit
	hub         *changehub.Hub // the watchers of the change feed (watch.go)
	oauthPrune  oauthPruner    // when OAuth rows were last pruned (oauth_prune.go)
}

// New builds a Service over a store and an index and starts the search-log flusher.
func New(store Store, index Index, opts Options) *Service {
	opts = opts.withDefaults()
	s := &Service{store: store, index: index, opts: opts, log: opts.Logger}
	if opts.BudgetAtOwner != nil {
		s.budget = opts.BudgetAtOwner
	} else {
		s.budgeted = NewBudgeted(store, store, opts)
		s.store, s.budget = Split{ControlStore: store, DataStore: s.budgeted}, s.budgeted
	}
	s.slog = newSearchLog(store, opts.Logger, opts.retention())
	s.recallLimit = opts.recallLimiter()
	s.hub = changehub.New(s.store, changehub.Options{Poll: opts.FeedPoll, Logger: opts.Logger})
	return s
}

// withDefaults fills in the defaults of the zero values.
func (opts Options) withDefaults() Options {
	if opts.DefaultWriteBudget <= 0 {
		opts.DefaultWriteBudget = memory.DefaultWriteBudget
	}
	if opts.DefaultWriteBudgetBytes <= 0 {
		opts.DefaultWriteBudgetBytes = memory.DefaultWriteBudgetBytes
	}
	if opts.MaxContent <= 0 {
		opts.MaxContent = memory.DefaultMaxContent
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts
}

// Close flushes the buffered search log. The store and index are closed by their owner.
func (s *Service) Close() error {
	return s.slog.Close()
}

// internalErr logs an unexpected error with context and hides it from the client.
func (s *Service) internalErr(op string, key memory.Key, err error) error {
	if memory.ErrorCode(err) != memory.CodeInternal {
		return err
	}
	if errors.Is(err, context.Canceled) {
		// The client hung up (or the server is shutting down): nothing broke.
		return memory.Errorf(memory.CodeUnavailable, "%s cancelled before it finished", op)
	}
	s.log.Error("internal error", "op", op, "project", key.ProjectLabel(), "agent", key.Agent, "err", err)
	return memory.Internal(err)
}
