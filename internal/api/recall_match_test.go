package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestRecallSaysMatch: each REST recall hit says how it was found. A
// question in other words than the note finds it by meaning; a word of the
// note and its meaning find it both ways; a word alone, by words. A hit not
// found by the query's words as written explains itself ("explanation").
func TestRecallSaysMatch(t *testing.T) {
	emb := servicetest.ConceptEmbedder{
		{"backup", "backups", "nightly", "snapshots", "offsite", "restore", "disk", "dies", "safe", "data"},
		{"release", "ship", "rollout"},
	}
	env := servicetest.NewMeaning(t, service.Options{}, emb)
	_, writer := env.Key(t, "ws", "proj", "writer", memory.RoleWrite)
	for slug, content := range map[string]string{
		"ops/backups": "Nightly backups: snapshots are copied offsite, a restore is tested weekly.",
		"ops/release": "Releases ship every second Tuesday after rollout review.",
		"ops/vendor":  "Order spare parts from the vendor portal.",
	} {
		if _, err := env.Svc.Remember(context.Background(), writer, service.RememberRequest{Slug: slug, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{env: env, h: api.New(env.Svc), write: writer}
	for _, tc := range []struct{ query, slug, match, explanation string }{
		{"How do we keep data safe if the disk dies?", "ops/backups", memory.MatchMeaning, "by meaning"},
		{"nightly backups", "ops/backups", memory.MatchBoth, ""},
		{"vendor portal", "ops/vendor", memory.MatchWords, ""},
		{"portla", "ops/vendor", memory.MatchWords, "matched 'portal' for 'portla'"},
	} {
		body, _ := json.Marshal(map[string]any{"query": tc.query})
		w := f.do(t, req{method: "POST", path: "/api/v1/recall", body: string(body), key: &f.write})
		var res struct {
			Hits []struct{ Slug, Match, Explanation string } `json:"hits"`
		}
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &res) != nil {
			t.Fatalf("recall %q: %d %s", tc.query, w.Code, w.Body)
		}
		if len(res.Hits) != 1 || res.Hits[0].Slug != tc.slug || res.Hits[0].Match != tc.match || res.Hits[0].Explanation != tc.explanation {
			t.Errorf("recall %q: %s, want only %s found by %s, explained %q", tc.query, w.Body, tc.slug, tc.match, tc.explanation)
		}
	}
}
