package app

import (
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/metrics"
)

// registerSessionCounters exposes what the MCP session limits refused, read
// from the server's counters at scrape time.
func registerSessionCounters(m *metrics.Metrics, mcp *mcpserver.Server) {
	const help = "MCP session requests refused, by reason: unknown (404: not a live session of the caller), sessions_full (429: server limit), streams_per_key (429: a key's open GET streams)."
	for reason, read := range map[string]func(mcpserver.SessionStats) int64{
		"unknown":         func(s mcpserver.SessionStats) int64 { return s.Unknown },
		"sessions_full":   func(s mcpserver.SessionStats) int64 { return s.RefusedFull },
		"streams_per_key": func(s mcpserver.SessionStats) int64 { return s.RefusedStreams },
	} {
		m.CounterFunc("munin_mcp_session_refusals_total", help, "reason", reason,
			func() float64 { return float64(read(mcp.SessionStats())) })
	}
	m.CounterFunc("munin_mcp_sessions_evicted_total",
		"MCP sessions ended because their key opened more than its limit (its least recently used).", "", "",
		func() float64 { return float64(mcp.SessionStats().Evicted) })
}

// registerKeyLimitCounters exposes what the limits per key refused.
func registerKeyLimitCounters(m *metrics.Metrics, k *httpserver.KeyLimits) {
	const help = "Requests refused because their key was over its requests in flight (in_flight) or per second (rate)."
	m.CounterFunc("munin_key_limit_rejections_total", help, "reason", "in_flight",
		func() float64 { return float64(k.Refused(true)) })
	m.CounterFunc("munin_key_limit_rejections_total", help, "reason", "rate",
		func() float64 { return float64(k.Refused(false)) })
}
