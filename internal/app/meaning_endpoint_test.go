package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/service"
)

var watchers atomic.Int64

// withEndpoint starts a test endpoint of 8 dimensions, set up by prepare
// (may be nil), and a server using it with cfg; it returns both and a
// caller of the first key.
func withEndpoint(t *testing.T, cfg Config, prepare func(*embedtest.Server)) (*embedtest.Server, *App, string, memory.Caller) {
	t.Helper()
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	if prepare != nil {
		prepare(ep)
	}
	cfg.Embeddings.URL, cfg.Embeddings.Model = ep.URL, "m"
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	a, base, token := serveWith(t, cfg)
	return ep, a, base, mustKey(t, a, token)
}

// waitMetric scrapes until series reaches at least want (bounded).
func waitMetric(t *testing.T, a *App, base, series string, want float64) {
	t.Helper()
	tok, _, err := a.Svc.CreateServerAdminKey(context.Background(), fmt.Sprint("watch-", watchers.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	for range 400 {
		if _, body := scrape(t, base, tok); strings.Contains(body, series) && metricValue(t, body, series) >= want {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	_, body := scrape(t, base, tok)
	t.Fatalf("%s never reached %v:\n%s", series, want, grepMunin(body))
}

// An endpoint that quotes its input in every error puts neither an entry's
// text nor a recall's query into the server's log, at any level: the
// worker's failures and the recall's meaning failures are logged by status
// and a fixed reason.
func TestMeaningLogsNoMemoryText(t *testing.T) {
	const content, query = "the vault code is 4711 behind the painting", "where is the vault painting"
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, a, base, c := withEndpoint(t, Config{Logger: logger}, func(ep *embedtest.Server) { ep.Fail(http.StatusInternalServerError) })
	if _, err := a.Svc.Remember(context.Background(), c, service.RememberRequest{Slug: "vault", Content: content}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: query}); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, a, base, `munin_embed_endpoint_failures_total{reason="status"}`, 2) // the worker's and the query's
	for i := 0; !strings.Contains(logs.String(), "will retry"); i++ {
		if i == 2000 {
			t.Fatalf("no failed call logged:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	l := logs.String()
	if !strings.Contains(l, "answered 500") {
		t.Fatalf("the failure is not logged by its status:\n%s", l)
	}
	if strings.Contains(l, "4711") || strings.Contains(l, "vault") {
		t.Fatalf("the log holds memory text:\n%s", l)
	}
}

// Eight recalls at once against an endpoint that answers 10 MiB bodies
// each answer by words, the failures counted, and read no more of those
// bodies than the cap for a query: the server allocates a few MiB, not the
// 8 × 10 MiB (and more, for growing buffers) it read before.
func TestMeaningBoundedAgainstBloatedAnswers(t *testing.T) {
	const recalls = 8
	// One key running all eight at once: no recall limit in the way.
	ep, a, base, c := withEndpoint(t, Config{Config: config.Config{Limits: config.Limits{RecallConcurrency: -1, RecallRate: -1}}}, nil)
	remember(t, a, c, "ops/backup")
	waitBacklog(t, a, service.DefaultProject)
	ep.SetMode(embedtest.Bloated)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make(chan error, recalls)
	for i := range recalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Distinct queries: the query cache answers none of them.
			res, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: fmt.Sprintf("nightly backups %d", i)})
			switch {
			case err != nil:
				errs <- err
			case len(res.Hits) == 0 || res.Hits[0].Match != memory.MatchWords:
				errs <- fmt.Errorf("recall %d: %+v, want a hit by words", i, res.Hits)
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d recalls against 10 MiB answers allocated %.1f MiB", recalls, float64(allocated)/(1<<20))
	if allocated > 40<<20 {
		t.Errorf("%d recalls against 10 MiB answers allocated %d MiB", recalls, allocated>>20)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitMetric(t, a, base, `munin_embed_endpoint_failures_total{reason="answer"}`, recalls)
	waitMetric(t, a, base, "munin_recall_meaning_failures_total", recalls)
}

// After a token rotation the endpoint answers 401 for a while: the worker
// retries with backoff, the failure shows in /metrics by its reason and as
// failing, nothing is given up on, and once the endpoint takes the key
// again every entry is embedded without a restart.
func TestMeaningOutlastsKeyRotation(t *testing.T) {
	ep, a, base, c := withEndpoint(t, Config{}, func(ep *embedtest.Server) { ep.Fail(http.StatusUnauthorized) })
	for i := range 3 {
		remember(t, a, c, fmt.Sprintf("e%d", i))
	}
	waitMetric(t, a, base, `munin_embed_endpoint_failures_total{reason="key"}`, 2) // failed, retried, failed again
	waitMetric(t, a, base, "munin_embed_endpoint_failing", 1)
	ep.SetMode(embedtest.OK) // the rotated key is in place
	waitBacklog(t, a, service.DefaultProject)
	body := metricsBody(t, a, base)
	if v := metricValue(t, body, "munin_embed_skipped_total"); v != 0 {
		t.Fatalf("munin_embed_skipped_total = %v: entries given up on after a 401", v)
	}
	if v := metricValue(t, body, "munin_embed_endpoint_failing"); v != 0 {
		t.Fatalf("munin_embed_endpoint_failing = %v after the endpoint answered again", v)
	}
}
