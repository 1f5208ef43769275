package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// exposition scrapes m the way Prometheus does.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestReplicaAckOnlyInClusterMode: docs/operations.md#metrics promises the
// munin_replica_ack_* series in cluster mode; a single server must not show
// them, not even at zero.
func TestReplicaAckOnlyInClusterMode(t *testing.T) {
	m := New()
	m.ReplicaAck(3, time.Millisecond) // a stray call records nothing visible
	if body := exposition(t, m); strings.Contains(body, "munin_replica_ack") {
		t.Fatalf("single server exposes replica ack metrics:\n%s", body)
	}
	m.Cluster(func() time.Duration { return 0 }, func() bool { return true })
	m.ReplicaAck(3, time.Millisecond)
	body := exposition(t, m)
	for _, want := range []string{"munin_replica_ack_writes_count 2", "munin_replica_ack_duration_seconds_count 2"} {
		if !strings.Contains(body, want) {
			t.Errorf("cluster mode: %q missing", want)
		}
	}
}
