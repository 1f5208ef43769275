package metrics

import (
	"strings"
	"testing"
	"time"
)

// Every scrape-time series reads its own count: each reader's value shows
// under its name and label, so a swapped reason or counter fails here.
func TestScrapedSeries(t *testing.T) {
	m := New()
	m.WriterQueue(func() int { return 3 })
	m.Sessions(func() SessionCounts {
		return SessionCounts{Open: 5, Unknown: 7, RefusedFull: 11, RefusedStreams: 13, Evicted: 17}
	})
	m.KeyLimits(func(inFlight bool) int64 {
		if inFlight {
			return 19
		}
		return 23
	})
	m.MeaningFailures(func() int64 { return 29 })
	m.Subscriptions(func() SubscriptionCounts {
		return SubscriptionCounts{Subscribers: 53, URIs: 59, Sent: 61, Overflowed: 67, Coalesced: 71, Resyncs: 73, Revoked: 79}
	})
	m.EmbedEndpoint([]string{"key", "timeout"}, func(kind string) int64 { return int64(len(kind)) }, func() bool { return true })
	m.EmbedWorker(func() int { return 31 }, func() EmbedCounts {
		return EmbedCounts{Calls: 37, Errors: 41, Embedded: 43, Skipped: 47}
	})
	body := exposition(t, m)
	for _, want := range []string{
		"munin_writer_queue_depth 3",
		"munin_mcp_sessions_open 5",
		`munin_mcp_session_refusals_total{reason="unknown"} 7`,
		`munin_mcp_session_refusals_total{reason="sessions_full"} 11`,
		`munin_mcp_session_refusals_total{reason="streams_per_key"} 13`,
		"munin_mcp_sessions_evicted_total 17",
		`munin_key_limit_rejections_total{reason="in_flight"} 19`,
		`munin_key_limit_rejections_total{reason="rate"} 23`,
		"munin_recall_meaning_failures_total 29",
		"munin_mcp_subscribers 53",
		"munin_mcp_subscribed_uris 59",
		`munin_mcp_subscription_notifications_total{outcome="sent"} 61`,
		`munin_mcp_subscription_notifications_total{outcome="overflowed"} 67`,
		`munin_mcp_subscription_notifications_total{outcome="coalesced"} 71`,
		`munin_mcp_subscription_notifications_total{outcome="resync"} 73`,
		`munin_mcp_subscription_notifications_total{outcome="revoked"} 79`,
		`munin_embed_endpoint_failures_total{reason="key"} 3`,
		`munin_embed_endpoint_failures_total{reason="timeout"} 7`,
		"munin_embed_endpoint_failing 1",
		"munin_embed_backlog 31",
		"munin_embed_requests_total 37",
		"munin_embed_errors_total 41",
		"munin_embed_vectors_total 43",
		"munin_embed_skipped_total 47",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("%q missing", want)
		}
	}
	if strings.Contains(body, "munin_cluster_lease_valid") || strings.Contains(body, "munin_replication_lag") {
		t.Error("a server that joined no cluster exposes cluster series")
	}
}

// Cluster registers the node's series with the replica confirmations.
func TestClusterSeries(t *testing.T) {
	m := New()
	m.Cluster(func() time.Duration { return 1500 * time.Millisecond }, func() bool { return false })
	m.ReplicaAck(4, time.Millisecond)
	body := exposition(t, m)
	for _, want := range []string{
		"munin_replication_lag_seconds 1.5",
		"munin_cluster_lease_valid 0",
		"munin_replica_ack_writes_sum 4",
		"munin_replica_ack_duration_seconds_count 1",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("%q missing", want)
		}
	}
	var nilM *Metrics
	nilM.Cluster(nil, nil) // a nil *Metrics records nothing and must not panic
	nilM.WriterQueue(nil)
}
