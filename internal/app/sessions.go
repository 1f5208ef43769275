package app

import (
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/metrics"
)

// registerSessionCounters exposes the MCP server's sessions: how many it
// keeps and what its limits refused, read at scrape time.
func registerSessionCounters(m *metrics.Metrics, mcp *mcpserver.Server) {
	m.Sessions(func() metrics.SessionCounts {
		s := mcp.SessionStats()
		return metrics.SessionCounts{Open: mcp.OpenSessions(), Unknown: s.Unknown, RefusedFull: s.RefusedFull,
			RefusedStreams: s.RefusedStreams, Evicted: s.Evicted}
	})
}

// registerSubscriptionCounters exposes the MCP resource subscriptions.
func registerSubscriptionCounters(m *metrics.Metrics, mcp *mcpserver.Server) {
	m.Subscriptions(func() metrics.SubscriptionCounts {
		s := mcp.SubscriptionStats()
		return metrics.SubscriptionCounts{Subscribers: s.Subscribers, URIs: s.URIs, Sent: s.Sent,
			Overflowed: s.Overflowed, Coalesced: s.Coalesced, Resyncs: s.Resyncs, Revoked: s.Revoked}
	})
}

// registerKeyLimitCounters exposes what the limits per key refused.
func registerKeyLimitCounters(m *metrics.Metrics, k *httpserver.KeyLimits) {
	m.KeyLimits(k.Refused)
}
