package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/service"
)

// echoingEndpoint answers like ep, or, while failing is set, 500 with a
// body that quotes the request's Authorization header (as a careless proxy
// might). It counts the requests and those that did not carry want.
func echoingEndpoint(t *testing.T, ep *embedtest.Server, want string, failing *atomic.Bool) (url string, calls, wrong *atomic.Int64) {
	t.Helper()
	calls, wrong = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		auth := r.Header.Get("Authorization")
		if auth != want {
			wrong.Add(1)
		}
		if failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":"upstream refused the request with Authorization: %s"}`, auth)
			return
		}
		body, _ := io.ReadAll(r.Body)
		relay(w, r, ep.URL, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls, wrong
}

// The embedding key reaches the endpoint as "Authorization: Bearer <key>"
// on every call (the worker's and the query embeddings), and shows neither
// in the log (at debug level, failures included, even when the endpoint
// quotes it back in its error) nor in /metrics.
func TestEmbedKeyReachesEndpointOnly(t *testing.T) {
	const key = "sk-munin-test-7Qx2vR9"
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	var failing atomic.Bool
	failing.Store(true)
	url, calls, wrong := echoingEndpoint(t, ep, "Bearer "+key, &failing)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, base, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: url, Model: "m", Key: key}}, Logger: logger})
	c := mustKey(t, a, token)
	for i := range 3 {
		remember(t, a, c, fmt.Sprintf("e%d", i))
	}
	if _, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: "nightly backups"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; !strings.Contains(logs.String(), "will retry"); i++ {
		if i == 2000 {
			t.Fatalf("no failed call logged:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	failing.Store(false)
	waitBacklog(t, a, service.DefaultProject)
	if _, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: "nightly backups"}); err != nil {
		t.Fatal(err)
	}

	if calls.Load() < 3 || wrong.Load() != 0 {
		t.Fatalf("%d calls, %d without \"Authorization: Bearer <key>\"", calls.Load(), wrong.Load())
	}
	if l := logs.String(); strings.Contains(l, key) || !strings.Contains(l, "recall answers by words only") {
		t.Fatalf("the log shows the key, or lacks the failures it should hold:\n%s", l)
	}
	if body := metricsBody(t, a, base); strings.Contains(body, key) || !strings.Contains(body, "munin_embed_errors_total") {
		t.Fatalf("/metrics shows the key, or no embedding metrics:\n%s", body)
	}
}
