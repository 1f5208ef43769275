package app

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/service"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// countVectors reads the vectors table of the default workspace straight from the file.
func countVectors(t *testing.T, a *App) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(a.cfg.Storage.DataDir, "default.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM vectors`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func remember(t *testing.T, a *App, c memory.Caller, slug string) {
	t.Helper()
	if _, err := a.Svc.Remember(context.Background(), c, service.RememberRequest{Slug: slug, Content: "nightly backups of " + slug}); err != nil {
		t.Fatalf("remember %s: %v", slug, err)
	}
}

// metricsBody scrapes /metrics with a new server-admin key.
func metricsBody(t *testing.T, a *App, base string) string {
	t.Helper()
	tok, _, err := a.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	_, body := scrape(t, base, tok)
	return body
}

// waitBacklog waits (bounded) until the worker has nothing left.
func waitBacklog(t *testing.T, a *App, ref memory.ProjectRef) {
	t.Helper()
	for range 2000 {
		n, err := a.Store.VectorBacklog(context.Background(), ref, a.Embedder.Model())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("backlog never drained: %+v", a.Embed.Stats())
}

// Off by default: no client, no worker, the service's index is the
// registry itself, no vector is written and no embedding metric exists.
func TestEmbeddingsOffByDefault(t *testing.T) {
	a, base, token := startServer(t)
	if a.Embed != nil || a.Embedder != nil {
		t.Fatal("embedding built without --embed-url")
	}
	c := mustKey(t, a, token)
	for i := range 5 {
		remember(t, a, c, fmt.Sprintf("e%d", i))
	}
	if n := countVectors(t, a); n != 0 {
		t.Fatalf("%d vectors written with embeddings off", n)
	}
	sum, err := a.Svc.Project(context.Background(), c, service.DefaultProject)
	if err != nil || sum.Embeddings {
		t.Fatalf("summary says embeddings on: %+v, %v", sum, err)
	}
	if body := metricsBody(t, a, base); !strings.Contains(body, "munin_writer_queue_depth") || strings.Contains(body, "munin_embed_") {
		t.Fatal("embedding metrics with embeddings off")
	}
	if _, err := Open(Config{Config: config.Config{Storage: config.Storage{DataDir: t.TempDir()}, Embeddings: config.Embeddings{Model: "m"}}, Logger: quietLog()}); err == nil || !strings.Contains(err.Error(), "--embed-url") {
		t.Fatalf("a model without a URL: %v", err)
	}
}

// Remember never waits for the endpoint: with the endpoint holding the
// worker's call, remembers return and recall finds them; after release every
// entry gets its vector and the metrics count it. (The duplicate hint by
// meaning, which asks the endpoint, is off without --embed-similar-min.)
func TestEmbeddingsRememberDoesNotWait(t *testing.T) {
	ep, a, base, c := withEndpoint(t, Config{}, func(ep *embedtest.Server) { ep.SetMode(embedtest.Block) })
	remember(t, a, c, "first")
	<-ep.Blocked() // the worker's call is now held by the endpoint
	for i := range 20 {
		remember(t, a, c, fmt.Sprintf("e%02d", i))
	}
	select {
	case <-ep.Blocked():
		t.Fatal("a second call while the first hangs") // one worker per workspace, one call at a time
	default:
	}
	// The recall's query embedding hangs too: recall answers by words once
	// its meaning wait is over.
	res, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: "e07"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("recall while the endpoint hangs: %+v, %v", res, err)
	}
	for _, h := range res.Hits {
		if h.Match != memory.MatchWords {
			t.Fatalf("hit %s says %q while the endpoint hangs, want words", h.Slug, h.Match)
		}
	}
	sum, err := a.Svc.Project(context.Background(), c, service.DefaultProject)
	if err != nil || !sum.Embeddings || sum.EmbedBacklog != 21 {
		t.Fatalf("summary while blocked: %+v, %v", sum, err)
	}
	ep.Release()
	waitBacklog(t, a, service.DefaultProject)
	if n := countVectors(t, a); n != 21 {
		t.Fatalf("%d vectors, want 21", n)
	}
	body := metricsBody(t, a, base)
	if v := metricValue(t, body, "munin_embed_vectors_total"); v != 21 {
		t.Fatalf("munin_embed_vectors_total = %v", v)
	}
	if v := metricValue(t, body, "munin_embed_backlog"); v != 0 {
		t.Fatalf("munin_embed_backlog = %v", v)
	}
}

// An endpoint answering garbage fails no remember; the failures are counted.
// (A wrong dimension needs a batch of two or an earlier answer to be wrong
// against: internal/embed tests it.)
func TestEmbeddingsGarbageEndpoint(t *testing.T) {
	for _, mode := range []embedtest.Mode{embedtest.Status500, embedtest.HTML, embedtest.NaN, embedtest.WrongCount} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			ep := embedtest.New(8)
			t.Cleanup(ep.Close)
			ep.SetMode(mode)
			a, base, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: ep.URL, Model: "m"}}, Logger: quietLog()})
			c := mustKey(t, a, token)
			for i := range 5 {
				remember(t, a, c, fmt.Sprintf("e%d", i))
			}
			for range 2000 {
				if a.Embed.Stats().Errors > 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if n := countVectors(t, a); n != 0 {
				t.Fatalf("%d vectors stored from garbage", n)
			}
			body := metricsBody(t, a, base)
			if v := metricValue(t, body, "munin_embed_errors_total"); v < 1 {
				t.Fatalf("munin_embed_errors_total = %v", v)
			}
		})
	}
}

// The project page shows the backlog when embeddings are on.
func TestEmbeddingsProjectPage(t *testing.T) {
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	ep.SetMode(embedtest.Block)
	a, base, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: ep.URL, Model: "m"}}, Logger: quietLog()})
	remember(t, a, mustKey(t, a, token), "first")
	<-ep.Blocked()
	body := webGet(t, base, token, "/w/default/p/default")
	if !strings.Contains(body, `<span id="embed-backlog">1</span> waiting for meaning search`) {
		t.Fatalf("no backlog on the project page:\n%s", body)
	}
}

// webGet signs in with token and returns the body of path.
func webGet(t *testing.T, base, token, path string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"key": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestEmbeddingsHintSimilarByMeaning: with meaning search on and
// --embed-similar-min set, a new entry whose words the hint by words cannot
// match (fewer than it needs in common) is hinted by meaning once the older
// entry has its vector; with meaning off, the same write is hinted by
// nothing.
func TestEmbeddingsHintSimilarByMeaning(t *testing.T) {
	old := service.RememberRequest{Slug: "ops/backups", Title: "Backups", Content: "backups offsite nightly"}
	again := service.RememberRequest{Slug: "notes/backups", Title: "Backups", Content: "nightly offsite backups"}
	var cfg Config
	cfg.Embeddings.SimilarMin = 0.85
	_, a, _, c := withEndpoint(t, cfg, nil)
	if _, err := a.Svc.Remember(context.Background(), c, old); err != nil {
		t.Fatal(err)
	}
	waitBacklog(t, a, service.DefaultProject)
	res, err := a.Svc.Remember(context.Background(), c, again)
	if err != nil || len(res.Similar) != 1 || res.Similar[0].Slug != old.Slug || res.Similar[0].Score < 0.85 {
		t.Fatalf("with meaning: %+v, %v; want %s hinted", res.Similar, err, old.Slug)
	}

	words, _, token := serveWith(t, Config{Logger: quietLog()})
	wc := mustKey(t, words, token)
	if _, err := words.Svc.Remember(context.Background(), wc, old); err != nil {
		t.Fatal(err)
	}
	if res, err := words.Svc.Remember(context.Background(), wc, again); err != nil || len(res.Similar) != 0 {
		t.Fatalf("without meaning: %+v, %v; the test needs a write the words do not hint", res.Similar, err)
	}
}
