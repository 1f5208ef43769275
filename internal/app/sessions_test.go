package app

import (
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/mcpserver"
)

// TestIdleSessionsExpire opens 10,000 MCP sessions and never closes them:
// after the idle TTL the server has forgotten all of them, their memory is
// returned, and an expired id gets 404 (the client opens a new session).
func TestIdleSessionsExpire(t *testing.T) {
	// The TTL must outlast opening all sessions on a loaded machine, or the
	// first ones expire before the count is checked.
	sessions, ttl := 10_000, 4*time.Second
	if raceEnabled {
		sessions = 1_000
	}
	// One key opens them all, so its per-key limit and its project's share
	// (1/ProjectSessionShare of the server's table) are lifted for this test.
	a, err := Open(Config{Config: config.Config{Server: config.Server{Addr: "127.0.0.1:8080"}, Storage: config.Storage{DataDir: t.TempDir()}, Limits: config.Limits{SessionIdleTTL: ttl, MaxSessionsPerKey: sessions, MaxSessions: sessions * mcpserver.ProjectSessionShare, SessionOpenRate: -1, RatePerKey: -1}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fs := &fuzzServer{h: a.Handler()}
	if fs.token, err = a.Svc.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	base := heapInUse()
	var first string
	opening := time.Now()
	for i := 0; i < sessions; i++ {
		rec := fs.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
		if rec.Code != 200 {
			t.Fatalf("initialize %d: %d %s", i, rec.Code, rec.Body)
		}
		if first == "" {
			first = rec.Header().Get("Mcp-Session-Id")
		}
	}
	// Only if opening took less than the TTL can none have expired yet.
	if n := a.MCP.OpenSessions(); n != int64(sessions) && time.Since(opening) < ttl {
		t.Fatalf("open sessions = %d, want %d", n, sessions)
	}
	open := heapInUse()
	t.Logf("%d sessions opened in %v", sessions, time.Since(opening).Round(time.Millisecond))

	deadline := time.Now().Add(30 * time.Second)
	for a.MCP.OpenSessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := a.MCP.OpenSessions(); n != 0 {
		t.Fatalf("%d sessions still open after the idle TTL", n)
	}
	expired := heapInUse()
	perSession := float64(open-base) / float64(sessions)
	t.Logf("heap: %.1f MiB before, %.1f MiB with %d sessions (%.1f KiB each), %.1f MiB after expiry",
		mib(base), mib(open), sessions, perSession/1024, mib(expired))
	if expired > base+(open-base)/4 {
		t.Errorf("expired sessions kept their memory: %.1f MiB after expiry vs %.1f MiB before", mib(expired), mib(base))
	}

	fs.session = first
	rec := fs.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if rec.Code != 404 {
		t.Fatalf("expired session id: status %d, want 404: %s", rec.Code, rec.Body)
	}
	fs.session = "mcp-session-not-hex"
	if rec := fs.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); rec.Code != 404 || !strings.Contains(strings.ToLower(rec.Body.String()), "session") {
		t.Fatalf("malformed session id: status %d: %s", rec.Code, rec.Body)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
