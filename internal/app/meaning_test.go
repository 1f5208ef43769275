package app

import (
	"context"
	"testing"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/service"
)

// With --embed-url, recall searches by meaning too: the worker's vectors
// reach the index, the query is embedded by the same endpoint, and a hit
// found both ways says so. When the endpoint then fails, recall answers by
// words alone, says "words", and the failure is counted.
func TestMeaningWiredEndToEnd(t *testing.T) {
	ep := embedtest.New(32)
	t.Cleanup(ep.Close)
	a, base, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: ep.URL, Model: "m"}}, Logger: quietLog()})
	c := mustKey(t, a, token)
	ctx := context.Background()
	for _, n := range []struct{ slug, content string }{
		{"ops/backup", "Nightly backups copy every workspace file to the second disk."},
		{"ops/deploy", "Deploys run from the main branch after review."},
	} {
		if _, err := a.Svc.Remember(ctx, c, service.RememberRequest{Slug: n.slug, Content: n.content}); err != nil {
			t.Fatal(err)
		}
	}
	waitBacklog(t, a, service.DefaultProject)
	res, err := a.Svc.Recall(ctx, c, service.RecallRequest{Query: "nightly backups workspace disk"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("recall: %+v, %v", res, err)
	}
	if h := res.Hits[0]; h.Slug != "ops/backup" || h.Match != memory.MatchBoth {
		t.Fatalf("first hit %s says %q, want ops/backup found both ways", h.Slug, h.Match)
	}

	ep.SetMode(embedtest.Status500)
	res, err = a.Svc.Recall(ctx, c, service.RecallRequest{Query: "deploys main branch review"})
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("recall with the endpoint failing: %+v, %v", res, err)
	}
	for _, h := range res.Hits {
		if h.Match != memory.MatchWords {
			t.Fatalf("hit %s says %q with the endpoint failing, want words", h.Slug, h.Match)
		}
	}
	if v := metricValue(t, metricsBody(t, a, base), "munin_recall_meaning_failures_total"); v < 1 {
		t.Fatalf("munin_recall_meaning_failures_total = %v after a failed query embedding", v)
	}
}

// --recall-exact switches the compound and typo tiers off: a typo finds
// nothing, as before them.
func TestRecallExact(t *testing.T) {
	ctx := context.Background()
	for _, exact := range []bool{false, true} {
		a, _, token := serveWith(t, Config{Config: config.Config{Search: config.Search{RecallExact: exact}}, Logger: quietLog()})
		c := mustKey(t, a, token)
		if _, err := a.Svc.Remember(ctx, c, service.RememberRequest{Slug: "db", Content: "Die Datenbank läuft im WAL-Modus."}); err != nil {
			t.Fatal(err)
		}
		res, err := a.Svc.Recall(ctx, c, service.RecallRequest{Query: "Datenbnak"})
		if err != nil {
			t.Fatal(err)
		}
		if found := len(res.Hits) > 0; found == exact {
			t.Fatalf("recall-exact %v: typo found %v", exact, found)
		}
	}
}
