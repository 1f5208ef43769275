package mcpserver

import (
	"fmt"
	"runtime"
	"testing"
)

// heapNow is the live heap after a collection.
func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSubscribedSessionMemory measures, through HTTP, 1,000 2025 sessions
// (initialize, initialized) and then the same sessions subscribed to an
// entry and its project each: the second step is what subscriptions cost
// on top of a session (registry, watch, mcp-go's bookkeeping of the
// request), checked against the 10 KB per subscription. The GET
// streams are left out: their cost is the load test's to measure.
func TestSubscribedSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sessions")
	}
	h := newSubHarness(t)
	h.srv.ids.maxPerKey = 2000
	const n = 1000
	sessions := make([]*rawSession, n)
	before := heapNow()
	for i := range sessions {
		sessions[i] = h.session2025(t, h.tokA)
	}
	opened := heapNow()
	for i, s := range sessions {
		s.ok(t, "resources/subscribe", map[string]any{"uri": fmt.Sprintf("munin://ws/p/notes/entry-%d", i)}, nil)
		s.ok(t, "resources/subscribe", map[string]any{"uri": "munin://ws/p"}, nil)
	}
	subscribed := heapNow()
	st := h.srv.SubscriptionStats()
	if st.Subscribers != n || st.URIs != 2*n || h.env.Svc.Watchers() != n {
		t.Fatalf("%+v, %d watchers; want %d subscribers with %d URIs and %d watchers", st, h.env.Svc.Watchers(), n, 2*n, n)
	}
	perSession := float64(int64(opened)-int64(before)) / n
	perSub := float64(int64(subscribed)-int64(opened)) / (2 * n)
	t.Logf("%d sessions: %.0f bytes per session (mcp-go and Munin, no stream); %.0f bytes per subscription on top", n, perSession, perSub)
	if perSub > 10<<10 {
		t.Errorf("%.0f bytes per subscription; the bound is 10 KB", perSub)
	}
}
