package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"munin/internal/config"
	"munin/internal/memory"
)

// scrape reads /metrics with the given key and returns the status and body.
func scrape(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metricValue finds one sample ("name{labels} value") in the text format.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("metric %s not found in:\n%s", series, grepMunin(body))
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func grepMunin(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "munin_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetrics drives the real server and checks that /metrics counts what
// happened: tool calls by outcome, latency, writer batches, refresh lag,
// sessions, budget rejections and HTTP requests — and that only server-admin
// keys may read it.
func TestMetrics(t *testing.T) {
	a, base, admin := startServer(t)
	ctx := context.Background()
	writer, _, err := a.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: "default", Project: "default"}, "bot", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, base, writer)
	// A recall opens the project's index; writes to a closed index cost no
	// index work (it catches up when opened), so only now do they refresh.
	call(t, c, "recall", map[string]any{"query": "metrics"}, nil)
	for i := 0; i < 3; i++ {
		call(t, c, "remember", map[string]any{"slug": "m/a", "content": "metrics count this"}, nil)
	}
	call(t, c, "recall", map[string]any{"query": "metrics"}, nil)
	call(t, c, "get", map[string]any{"slug": "m/missing"}, nil)
	if err := a.Svc.SetProjectWriteBudget(ctx, memory.ProjectRef{Workspace: "default", Project: "default"}, 3); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, c, "remember", map[string]any{"slug": "m/a", "content": "over budget"}, nil); !isErr || !strings.HasPrefix(text, "budget_exhausted") {
		t.Fatalf("4th write: %q", text)
	}

	// Clients on the newest protocol (2026-07-28) have no sessions; one on
	// an older revision opens one, which the sessions gauge counts.
	rawInitialize(t, base, writer)

	if status, _ := scrape(t, base, ""); status != http.StatusUnauthorized {
		t.Fatalf("metrics without a key: %d", status)
	}
	if status, _ := scrape(t, base, writer); status != http.StatusForbidden {
		t.Fatalf("metrics with a write key: %d", status)
	}
	// The metrics show every project's load: a project admin gets 403, only
	// a server-admin key reads them.
	if status, body := scrape(t, base, admin); status != http.StatusForbidden || !strings.Contains(body, "server-admin") {
		t.Fatalf("metrics with a project admin key: %d %s, want 403 naming the server-admin key", status, body)
	}
	server, _, err := a.Svc.CreateServerAdminKey(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	status, body := scrape(t, base, server)
	if status != 200 {
		t.Fatalf("metrics with the server-admin key: %d %s", status, body)
	}
	for series, want := range map[string]float64{
		`munin_tool_calls_total{outcome="ok",tool="remember"}`:               3,
		`munin_tool_calls_total{outcome="budget_exhausted",tool="remember"}`: 1,
		`munin_tool_calls_total{outcome="not_found",tool="get"}`:             1,
		`munin_tool_calls_total{outcome="ok",tool="recall"}`:                 2,
		`munin_tool_duration_seconds_count{tool="remember"}`:                 4,
		`munin_budget_rejections_total`:                                      1,
		`munin_mcp_sessions_open`:                                            1,
		`munin_writer_queue_depth`:                                           0,
		`munin_http_overload_rejections_total`:                               0,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if strings.Contains(body, "munin_replica_ack") {
		t.Error("a single server exposes munin_replica_ack_* (no replica without --cluster)")
	}
	for series, atLeast := range map[string]float64{
		`munin_writer_batch_writes_count`: 3,
		// Refreshes are batched: the three writes may share one batch,
		// but the recall waited for it, so at least one was applied.
		`munin_index_refresh_lag_seconds_count`:               1,
		`munin_http_requests_total{code="200",route="mcp"}`:   6,
		`munin_http_requests_total{code="401",route="probe"}`: 1,
	} {
		if got := metricValue(t, body, series); got < atLeast {
			t.Errorf("%s = %v, want at least %v", series, got, atLeast)
		}
	}
	if strings.Contains(body, admin) || strings.Contains(body, writer) || strings.Contains(body, server) {
		t.Fatal("a key appears in the metrics")
	}
}

// TestReadyz: the probe answers without a key while the server serves.
func TestReadyz(t *testing.T) {
	_, base, _ := startServer(t)
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("readyz: %d", resp.StatusCode)
	}
}

// TestKeyLimitRejectionsAreCounted: the refusals of a key over its requests
// per second show in munin_key_limit_rejections_total{reason="rate"}, one
// per 429 the key got.
func TestKeyLimitRejectionsAreCounted(t *testing.T) {
	// One request per 100 s: after the first, every request is refused
	// (each refusal held back a second).
	a, base, token := serveWith(t, Config{Config: config.Config{Limits: config.Limits{RatePerKey: 0.01}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	refused := 0
	for range 3 {
		req, _ := http.NewRequest("GET", base+"/api/v1/entries", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("3 requests at one per 100 s: %d refused, want 2", refused)
	}
	ops, _, err := a.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	_, body := scrape(t, base, ops)
	if got := metricValue(t, body, `munin_key_limit_rejections_total{reason="rate"}`); got != float64(refused) {
		t.Fatalf(`munin_key_limit_rejections_total{reason="rate"} = %v, want %d`, got, refused)
	}
	if got := metricValue(t, body, `munin_key_limit_rejections_total{reason="in_flight"}`); got != 0 {
		t.Fatalf(`munin_key_limit_rejections_total{reason="in_flight"} = %v, want 0`, got)
	}
}
