package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
func meaningOptions(c *embed.Client, st *store.Store, m *metrics.Metrics) search.MeaningOptions {
	if c == nil {
		return search.MeaningOptions{} // an untyped nil Embedder: meaning off
	}
	var failures atomic.Int64
	m.CounterFunc("munin_recall_meaning_failures_total", "Recalls that answered by words alone because the meaning path failed (query embedding, vectors).", "", "", func() float64 { return float64(failures.Load()) })
	registerEndpointMetrics(m, c)
	return search.MeaningOptions{Embedder: c, Vectors: st, OnFailure: func() { failures.Add(1) }}
}

// registerEndpointMetrics exposes the endpoint's failures as the client saw
// them in every call, the worker's and the recalls': a rotated key (401,
// 403) or a wrong URL (404) shows here by its reason, not as entries
// refused one by one.
func registerEndpointMetrics(m *metrics.Metrics, c *embed.Client) {
	for _, kind := range embed.FailureKinds {
		m.CounterFunc("munin_embed_endpoint_failures_total", "Failed calls to the embedding endpoint by reason: key (401, 403), not_found (404), status (other), timeout, network, answer (unusable: not JSON, too large, wrong count or dimension). A text the endpoint refuses (400, 413, 422) is not counted here.",
			"reason", kind, func() float64 { return float64(c.Failures(kind)) })
	}
	m.GaugeFunc("munin_embed_endpoint_failing", "1 while the last call to the embedding endpoint failed (then the worker retries with backoff and recall answers by words), else 0.", func() float64 {
		if c.Health().Failing {
			return 1
		}
		return 0
	})
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
	m.GaugeFunc("munin_embed_backlog", "Live entries waiting for their vector, all workspaces (counted at scrape time).", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, _ := w.Backlog(ctx) // on error, what was counted so far
		return float64(n)
	})
	m.CounterFunc("munin_embed_requests_total", "Calls to the embedding endpoint.", "", "", func() float64 { return float64(w.Stats().Calls) })
	m.CounterFunc("munin_embed_errors_total", "Failed calls to the embedding endpoint (status, timeout, garbage) and failed stores of vectors.", "", "", func() float64 { return float64(w.Stats().Errors) })
	m.CounterFunc("munin_embed_vectors_total", "Vectors computed and stored.", "", "", func() float64 { return float64(w.Stats().Embedded) })
	m.CounterFunc("munin_embed_skipped_total", "Entries the embedding endpoint refused for good (400, 413 or 422: the text, not the key or the URL), skipped until they change or the server restarts.", "", "", func() float64 { return float64(w.Stats().Skipped) })
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
