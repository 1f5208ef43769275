// Package metrics holds Munin's Prometheus instruments, and is the one
// place a series is declared: those the layers feed (New) and those read
// at scrape time from counts other components keep (scraped.go), so that
// everything /metrics serves is named and documented here. A nil *Metrics
// is valid and records nothing, so every layer can take one without tests
// having to build a registry.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the set of instruments of one server.
type Metrics struct {
	registry *prometheus.Registry

	toolCalls        *prometheus.CounterVec
	toolDuration     *prometheus.HistogramVec
	httpRequests     *prometheus.CounterVec
	inFlight         prometheus.Gauge
	rejected         prometheus.Counter
	batchSize        prometheus.Histogram
	batchDuration    prometheus.Histogram
	refreshLag       prometheus.Histogram
	ackSize          prometheus.Histogram
	ackDuration      prometheus.Histogram
	budgetRejections prometheus.Counter
}

// latencyBuckets span 100 µs to 10 s: a get is sub-millisecond, a cold
// index build of a large project takes seconds.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 12)

// New creates the instruments in a fresh registry, with Go runtime and
// process metrics.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "munin_tool_calls_total", Help: "MCP tool calls by tool and outcome (ok or the error code).",
		}, []string{"tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "munin_tool_duration_seconds", Help: "MCP tool call latency.", Buckets: latencyBuckets,
		}, []string{"tool"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "munin_http_requests_total", Help: "HTTP requests by route (mcp, api, web, other) and status code.",
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "munin_http_requests_in_flight", Help: "HTTP requests being served (MCP streams excluded).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "munin_http_overload_rejections_total", Help: "Requests answered 429 because the in-flight limit was reached.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "munin_writer_batch_writes", Help: "Writes committed together in one transaction (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "munin_writer_batch_duration_seconds", Help: "Time from BEGIN to COMMIT of one writer batch.", Buckets: latencyBuckets,
		}),
		refreshLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "munin_index_refresh_lag_seconds", Help: "Per index refresh batch: time from its oldest queued write until the index shows it.", Buckets: latencyBuckets,
		}),
		ackSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "munin_replica_ack_writes", Help: "Cluster mode: writes acknowledged together by one replica confirmation.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
		ackDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "munin_replica_ack_duration_seconds", Help: "Cluster mode: time from the first commit a replica confirmation covers until the confirmation (gathering included).", Buckets: latencyBuckets,
		}),
		budgetRejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "munin_budget_rejections_total", Help: "Writes refused because a project's hourly write budget was used up.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.toolCalls, m.toolDuration, m.httpRequests, m.inFlight, m.rejected,
		m.batchSize, m.batchDuration, m.refreshLag, m.budgetRejections,
	)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// ToolCall records one MCP tool call; outcome is "ok" or the error code.
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// HTTPRequest records one answered HTTP request.
func (m *Metrics) HTTPRequest(route string, code int) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(route, statusText(code)).Inc()
}

// InFlight moves the in-flight gauge by delta (+1 on entry, -1 on exit).
func (m *Metrics) InFlight(delta float64) {
	if m == nil {
		return
	}
	m.inFlight.Add(delta)
}

// Rejected counts one request refused for overload.
func (m *Metrics) Rejected() {
	if m == nil {
		return
	}
	m.rejected.Inc()
}

// Batch records one committed writer batch.
func (m *Metrics) Batch(writes int, d time.Duration) {
	if m == nil {
		return
	}
	m.batchSize.Observe(float64(writes))
	m.batchDuration.Observe(d.Seconds())
}

// ReplicaAck records one replica confirmation (cluster mode): how many
// writes it acknowledged and how long the oldest of them waited for it.
func (m *Metrics) ReplicaAck(writes int, d time.Duration) {
	if m == nil {
		return
	}
	m.ackSize.Observe(float64(writes))
	m.ackDuration.Observe(d.Seconds())
}

// RefreshLag records, per applied refresh batch, how long its oldest write
// waited until the index showed it.
func (m *Metrics) RefreshLag(d time.Duration) {
	if m == nil {
		return
	}
	m.refreshLag.Observe(d.Seconds())
}

// BudgetRejected counts one write refused by the write budget.
func (m *Metrics) BudgetRejected() {
	if m == nil {
		return
	}
	m.budgetRejections.Inc()
}

// statusText keeps label values few: the exact code for the ones that
// matter, else the class.
func statusText(code int) string {
	switch code {
	case 200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 503:
		return strconv.Itoa(code)
	}
	return strconv.Itoa(code/100) + "xx"
}
