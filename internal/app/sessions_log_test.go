package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/reqlog/logtest"
)

// syncBuffer collects log lines written from many goroutines.
type syncBuffer = logtest.Buffer

// mcpRequest sends one request to /mcp and returns its status; a stream
// that was let through is closed at once.
func mcpRequest(t *testing.T, base, method, token, session, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet || resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionIDsAreNotLogged runs sessions through their whole life on the
// real server — opened, used, streamed, deleted, evicted by the per-key
// limit, refused to another key, expired by the idle sweeper — with every
// log line captured at debug level: no session id appears whole, while the
// sweeper's line still names the session by a short prefix. The session
// counters reach the metrics.
func TestSessionIDsAreNotLogged(t *testing.T) {
	logs := &syncBuffer{}
	a, base, admin := serveWith(t, Config{
		Config: config.Config{Limits: config.Limits{
			SessionIdleTTL:    3 * time.Second, // the sweeper runs every 1.5 s
			MaxSessionsPerKey: 1,
		}},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	writer, _, err := a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: "default", Project: "default"}, "bot", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	s1 := rawInitialize(t, base, admin)
	for _, step := range []struct {
		method, token, body string
		want                int
	}{
		{"POST", admin, list, 200},
		{"GET", admin, "", 200},
		{"GET", writer, "", 404}, // another key's session
		{"DELETE", admin, "", 200},
		{"POST", admin, list, 404}, // ended
	} {
		if got := mcpRequest(t, base, step.method, step.token, s1, step.body); got != step.want {
			t.Fatalf("%s on s1 with %s key: %d, want %d", step.method, map[string]string{admin: "admin", writer: "write"}[step.token], got, step.want)
		}
	}
	s2 := rawInitialize(t, base, writer)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	s3 := rawInitialize(t, base, writer) // evicts s2: the key's limit is 1
	if got := mcpRequest(t, base, "POST", writer, s2, list); got != 404 {
		t.Fatalf("evicted session: %d, want 404\n%s", got, logs)
	}
	// s3 is left idle until the sweeper ends it (bounded wait).
	for i := 0; a.MCP.OpenSessions() > 0 || !strings.Contains(logs.String(), "Sweeping expired session"); i++ {
		if i == 300 {
			t.Fatalf("the idle session was not swept: %d open", a.MCP.OpenSessions())
		}
		time.Sleep(100 * time.Millisecond)
	}

	out := logs.String()
	for name, id := range map[string]string{"s1": s1, "s2": s2, "s3": s3} {
		if tail := id[len(id)-16:]; strings.Contains(out, tail) {
			t.Errorf("the log holds session %s whole:\n%s", name, out)
		}
	}
	if short := s3[:len("mcp-session-")+8]; !strings.Contains(out, short) {
		t.Errorf("the sweeper's line does not name the session by its prefix %s:\n%s", short, out)
	}

	ops, _, err := a.Svc.CreateServerAdminKey(context.Background(), "ops") // /metrics is the server admin's
	if err != nil {
		t.Fatal(err)
	}
	_, body := scrape(t, base, ops)
	for series, want := range map[string]float64{
		`munin_mcp_sessions_open`:                                    0,
		`munin_mcp_sessions_evicted_total`:                           1,
		`munin_mcp_session_refusals_total{reason="unknown"}`:         3,
		`munin_mcp_session_refusals_total{reason="sessions_full"}`:   0,
		`munin_mcp_session_refusals_total{reason="streams_per_key"}`: 0,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
