package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The series below are read at scrape time from counts other components
// keep (the writers' queues, the MCP server's sessions, the embedding
// worker, …). They are declared here, by name and help, beside the
// instruments of New, so that everything /metrics serves is registered in
// this package; the application hands over the readers. Each method is
// called once per Metrics (a second call panics: duplicate series).

// WriterQueue registers munin_writer_queue_depth: writes waiting for their
// workspace's writer, all workspaces.
func (m *Metrics) WriterQueue(depth func() int) {
	m.gaugeFunc("munin_writer_queue_depth", "Writes waiting for their workspace's writer.", func() float64 { return float64(depth()) })
}

// SessionCounts is what the MCP server counts of its sessions.
type SessionCounts struct {
	Open           int64 // sessions kept now
	Unknown        int64 // requests refused with 404: not a live session of the caller
	RefusedFull    int64 // new sessions refused with 429 at a session limit
	RefusedStreams int64 // MCP streams (GET or subscriptions/listen) refused with 429 at a key's or project's stream limit
	Evicted        int64 // sessions ended because their key or project opened one more than its limit
}

// Sessions registers the MCP session series: munin_mcp_sessions_open,
// munin_mcp_session_refusals_total by reason and
// munin_mcp_sessions_evicted_total.
func (m *Metrics) Sessions(read func() SessionCounts) {
	m.gaugeFunc("munin_mcp_sessions_open", "MCP sessions the server keeps.", func() float64 { return float64(read().Open) })
	const help = "MCP session requests refused, by reason: unknown (404: not a live session of the caller), sessions_full (429: server limit), streams_per_key (429: a key's or project's open MCP streams, GET or subscriptions/listen)."
	for reason, count := range map[string]func(SessionCounts) int64{
		"unknown":         func(s SessionCounts) int64 { return s.Unknown },
		"sessions_full":   func(s SessionCounts) int64 { return s.RefusedFull },
		"streams_per_key": func(s SessionCounts) int64 { return s.RefusedStreams },
	} {
		m.counterFunc("munin_mcp_session_refusals_total", help, "reason", reason, func() float64 { return float64(count(read())) })
	}
	m.counterFunc("munin_mcp_sessions_evicted_total",
		"MCP sessions ended because their key opened more than its limit (its least recently used).", "", "",
		func() float64 { return float64(read().Evicted) })
}

// SubscriptionCounts is what the MCP server counts of its resource
// subscriptions.
type SubscriptionCounts struct {
	Subscribers, URIs int   // subscribers (2025 sessions, listen streams, stdio) and the URIs they hold now
	Sent              int64 // notifications handed to a session's or stream's buffer
	Overflowed        int64 // notifications that found the buffer full (owed: the resync marker)
	Coalesced         int64 // changes told by a notification already due (the pace)
	Resyncs           int64 // resync markers sent in full
	Revoked           int64 // subscribers dropped because a key was revoked
}

// Subscriptions registers the MCP resource subscription series:
// munin_mcp_subscribers, munin_mcp_subscribed_uris and
// munin_mcp_subscription_notifications_total by outcome.
func (m *Metrics) Subscriptions(read func() SubscriptionCounts) {
	m.gaugeFunc("munin_mcp_subscribers", "MCP sessions, listen streams and stdio sessions with resource subscriptions.", func() float64 { return float64(read().Subscribers) })
	m.gaugeFunc("munin_mcp_subscribed_uris", "Resource URIs the MCP subscribers hold.", func() float64 { return float64(read().URIs) })
	const help = "MCP resource notifications, by outcome: sent (to a session's or stream's buffer), overflowed (buffer full: owed as the resync marker), coalesced (told by one already due), resync (resync markers sent), revoked (subscribers dropped for a revoked key)."
	for outcome, count := range map[string]func(SubscriptionCounts) int64{
		"sent":       func(s SubscriptionCounts) int64 { return s.Sent },
		"overflowed": func(s SubscriptionCounts) int64 { return s.Overflowed },
		"coalesced":  func(s SubscriptionCounts) int64 { return s.Coalesced },
		"resync":     func(s SubscriptionCounts) int64 { return s.Resyncs },
		"revoked":    func(s SubscriptionCounts) int64 { return s.Revoked },
	} {
		m.counterFunc("munin_mcp_subscription_notifications_total", help, "outcome", outcome, func() float64 { return float64(count(read())) })
	}
}

// KeyLimits registers munin_key_limit_rejections_total: requests refused
// because their key was over its requests in flight or per second.
func (m *Metrics) KeyLimits(refused func(inFlight bool) int64) {
	const help = "Requests refused because their key was over its requests in flight (in_flight) or per second (rate)."
	m.counterFunc("munin_key_limit_rejections_total", help, "reason", "in_flight", func() float64 { return float64(refused(true)) })
	m.counterFunc("munin_key_limit_rejections_total", help, "reason", "rate", func() float64 { return float64(refused(false)) })
}

// Cluster registers the series only a node of a cluster feeds: the replica
// confirmations (ReplicaAck), munin_replication_lag_seconds and
// munin_cluster_lease_valid. On a single server they would show as series
// that never move, which reads as "replication is configured", so they are
// registered only when the server joined a cluster.
func (m *Metrics) Cluster(lag func() time.Duration, leaseValid func() bool) {
	if m == nil {
		return
	}
	m.registry.MustRegister(m.ackSize, m.ackDuration)
	m.gaugeFunc("munin_replication_lag_seconds", "Longest time a committed write of a workspace this node owns has waited for the replica.",
		func() float64 { return lag().Seconds() })
	m.gaugeFunc("munin_cluster_lease_valid", "1 while this node's etcd lease is valid.", func() float64 { return one(leaseValid()) })
}

// MeaningFailures registers munin_recall_meaning_failures_total: recalls
// that answered by words alone because the meaning path failed.
func (m *Metrics) MeaningFailures(count func() int64) {
	m.counterFunc("munin_recall_meaning_failures_total", "Recalls that answered by words alone because the meaning path failed (query embedding, vectors).", "", "",
		func() float64 { return float64(count()) })
}

// EmbedEndpoint registers the embedding endpoint's failures as its client
// saw them in every call, by kind (munin_embed_endpoint_failures_total),
// and munin_embed_endpoint_failing: a rotated key (401, 403) or a wrong URL
// (404) shows here by its reason, not as entries refused one by one.
func (m *Metrics) EmbedEndpoint(kinds []string, failures func(kind string) int64, failing func() bool) {
	for _, kind := range kinds {
		m.counterFunc("munin_embed_endpoint_failures_total", "Failed calls to the embedding endpoint by reason: key (401, 403), not_found (404), status (other), timeout, network, answer (unusable: not JSON, too large, wrong count or dimension). A text the endpoint refuses (400, 413, 422) is not counted here.",
			"reason", kind, func() float64 { return float64(failures(kind)) })
	}
	m.gaugeFunc("munin_embed_endpoint_failing", "1 while the last call to the embedding endpoint failed (then the worker retries with backoff and recall answers by words), else 0.",
		func() float64 { return one(failing()) })
}

// EmbedCounts is what the embedding worker counts.
type EmbedCounts struct {
	Calls    int64 // calls to the endpoint
	Errors   int64 // failed calls and failed stores of vectors
	Embedded int64 // vectors stored
	Skipped  int64 // entries refused for good by the endpoint
}

// EmbedWorker registers the embedding worker's backlog (counted at scrape
// time by backlog) and its counters.
func (m *Metrics) EmbedWorker(backlog func() int, counts func() EmbedCounts) {
	m.gaugeFunc("munin_embed_backlog", "Live entries waiting for their vector, all workspaces (counted at scrape time).", func() float64 { return float64(backlog()) })
	m.counterFunc("munin_embed_requests_total", "Calls to the embedding endpoint.", "", "", func() float64 { return float64(counts().Calls) })
	m.counterFunc("munin_embed_errors_total", "Failed calls to the embedding endpoint (status, timeout, garbage) and failed stores of vectors.", "", "", func() float64 { return float64(counts().Errors) })
	m.counterFunc("munin_embed_vectors_total", "Vectors computed and stored.", "", "", func() float64 { return float64(counts().Embedded) })
	m.counterFunc("munin_embed_skipped_total", "Entries the embedding endpoint refused for good (400, 413 or 422: the text, not the key or the URL), skipped until they change or the server restarts.", "", "", func() float64 { return float64(counts().Skipped) })
}

// one is a gauge's value of a condition.
func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gaugeFunc registers a gauge read at scrape time.
func (m *Metrics) gaugeFunc(name, help string, fn func() float64) {
	if m == nil {
		return
	}
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// counterFunc registers a counter read at scrape time from a count kept
// elsewhere. With a label name, each call adds one series of the same
// counter (label = value); without, the counter has no labels.
func (m *Metrics) counterFunc(name, help, label, value string, fn func() float64) {
	if m == nil {
		return
	}
	opts := prometheus.CounterOpts{Name: name, Help: help}
	if label != "" {
		opts.ConstLabels = prometheus.Labels{label: value}
	}
	m.registry.MustRegister(prometheus.NewCounterFunc(opts, fn))
}
