package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"munin/internal/service"
)

// TestRecallLimitsOverREST: a query over the term cap is 400 invalid naming
// both numbers (and spends a token of the rate, which comes first); a key
// over its recall rate gets 429 budget_exhausted with a
// Retry-After of the wait.
func TestRecallLimitsOverREST(t *testing.T) {
	now := time.Now()
	f := newFixture(t, service.Options{RecallRate: 0.1, RecallBurst: 3, Now: func() time.Time { return now }})
	var words []string
	for i := range 33 {
		words = append(words, fmt.Sprintf("qz%c%c", 'b'+i/10, 'b'+i%10))
	}
	rec := f.do(t, req{method: "GET", path: "/api/v1/recall?q=" + url.QueryEscape(strings.Join(words, " ")), key: &f.read})
	code, msg := errorOf(t, rec, http.StatusBadRequest)
	if code != "invalid" || msg != "query has 33 distinct search terms; at most 32 are allowed" {
		t.Fatalf("33 terms: %s: %s", code, msg)
	}
	for range 2 {
		decode(t, f.do(t, req{method: "GET", path: "/api/v1/recall?q=x", key: &f.read}), http.StatusOK)
	}
	rec = f.do(t, req{method: "GET", path: "/api/v1/recall?q=x", key: &f.read})
	code, msg = errorOf(t, rec, http.StatusTooManyRequests)
	if code != "budget_exhausted" || !strings.Contains(msg, "may recall 0.1 times per second; retry in 10 s") {
		t.Fatalf("over the rate: %s: %s", code, msg)
	}
	if ra := rec.Header().Get("Retry-After"); ra != "10" {
		t.Fatalf("Retry-After %q, want 10", ra)
	}
	// Another key of the project has its own bucket.
	decode(t, f.do(t, req{method: "GET", path: "/api/v1/recall?q=x", key: &f.write}), http.StatusOK)
}
