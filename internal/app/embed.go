package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/config"
	"munin/internal/embed"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/search"
	"munin/internal/store"
)

// openEmbedding builds the embedding client and worker when cfg names an
// endpoint; with no Embeddings.URL both are nil and nothing is ever called.
func openEmbedding(cfg Config, st *store.Store) (*embed.Client, *embed.Worker, error) {
	if cfg.Embeddings.URL == "" {
		if cfg.Embeddings.Model != "" {
			return nil, nil, fmt.Errorf("--embed-model %q needs --embed-url (env MUNIN_EMBED_URL)", cfg.Embeddings.Model)
		}
		return nil, nil, nil
	}
	c, err := NewEmbedClient(cfg.Embeddings)
	if err != nil {
		return nil, nil, err
	}
	w := embed.NewWorker(st, c, embed.Options{Logger: cfg.Logger.With("component", "embed"), OnStored: cfg.OnVectorsStored})
	return c, w, nil
}

// meaningOptions switch recall's meaning path on when embeddings are: the
// client embeds queries, the store holds the vectors, and every recall that
// falls back to words alone is counted.
func meaningOptions(c *embed.Client, cfg config.Embeddings, st *store.Store, m *metrics.Metrics) search.MeaningOptions {
	if c == nil {
		return search.MeaningOptions{} // an untyped nil Embedder: meaning off
	}
	var failures atomic.Int64
	m.MeaningFailures(failures.Load)
	registerEndpointMetrics(m, c)
	return search.MeaningOptions{Embedder: c, Vectors: st, NearMin: float32(cfg.SimilarMin), OnFailure: func() { failures.Add(1) }}
}

// registerEndpointMetrics exposes the endpoint's failures as the client saw
// them in every call, the worker's and the recalls': a rotated key (401,
// 403) or a wrong URL (404) shows here by its reason, not as entries
// refused one by one.
func registerEndpointMetrics(m *metrics.Metrics, c *embed.Client) {
	m.EmbedEndpoint(embed.FailureKinds, c.Failures, func() bool { return c.Health().Failing })
}

// chainStored calls both functions with each stored batch (first may be nil).
func chainStored(first, then func([]memory.Vector)) func([]memory.Vector) {
	if first == nil {
		return then
	}
	return func(vs []memory.Vector) { first(vs); then(vs) }
}

// registerEmbedMetrics exposes the worker's counters and backlog.
func registerEmbedMetrics(m *metrics.Metrics, w *embed.Worker) {
	m.EmbedWorker(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, _ := w.Backlog(ctx) // on error, what was counted so far
		return n
	}, func() metrics.EmbedCounts {
		s := w.Stats()
		return metrics.EmbedCounts{Calls: s.Calls, Errors: s.Errors, Embedded: s.Embedded, Skipped: s.Skipped}
	})
}

// notifyingIndex is the search index as the service sees it when embeddings
// are on: every queued refresh (one per committed write) also wakes the
// embedding worker of the write's workspace, which never blocks.
type notifyingIndex struct {
	*search.Registry
	w *embed.Worker
}

// Queue queues the index refresh, then wakes the worker.
func (n notifyingIndex) Queue(ref memory.ProjectRef, slug string) error {
	err := n.Registry.Queue(ref, slug)
	n.w.Written(ref, slug)
	return err
}

// backlogTTL is how long a project's counted backlog is shown again: the
// count reads every entry of the project (about 0.1 s at 100,000 entries),
// too much for every page view.
const backlogTTL = 5 * time.Second

// embedBacklog is the service's EmbedBacklog with embeddings on.
func embedBacklog(st *store.Store, model string) func(context.Context, memory.ProjectRef) (int, error) {
	type counted struct {
		n  int
		at time.Time
	}
	var cache sync.Map // memory.ProjectRef -> counted
	return func(ctx context.Context, ref memory.ProjectRef) (int, error) {
		if c, ok := cache.Load(ref); ok && time.Since(c.(counted).at) < backlogTTL {
			return c.(counted).n, nil
		}
		n, err := st.VectorBacklog(ctx, ref, model)
		if err == nil {
			cache.Store(ref, counted{n: n, at: time.Now()})
		}
		return n, err
	}
}
