package api_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
)

// TestByteBudget: bytes_per_hour beside writes_per_hour; past it a write is
// 429 budget_exhausted naming the bytes, with Retry-After; a bad value is
// 400 and changes neither budget.
func TestByteBudget(t *testing.T) {
	f := newFixture(t, service.Options{})
	put := func(body string) *httptest.ResponseRecorder {
		return f.do(t, req{method: "PUT", path: "/api/v1/project/budget", key: &f.admin, body: body})
	}
	if rec := put(`{"bytes_per_hour":10}`); rec.Code != http.StatusNoContent {
		t.Fatalf("set byte budget: %d %s", rec.Code, rec.Body.String())
	}
	// A bad field refuses the whole change: writes_per_hour stays the default.
	errorOf(t, put(`{"writes_per_hour":1,"bytes_per_hour":-1}`), http.StatusBadRequest)
	decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write, body: `{"slug":"a","content":"12345678"}`}), http.StatusCreated)
	rec := f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write, body: `{"slug":"b","content":"abc"}`})
	code, msg := errorOf(t, rec, http.StatusTooManyRequests)
	if code != "budget_exhausted" || !strings.Contains(msg, "8 of its 10 bytes") || !strings.Contains(msg, "resets") {
		t.Fatalf("%s: %s", code, msg)
	}
	if secs, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || secs < 1 || secs > 3600 {
		t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
	}
	// Both fields are optional; 0 is the server default again.
	if rec := put(`{"bytes_per_hour":0}`); rec.Code != http.StatusNoContent {
		t.Fatalf("reset byte budget: %d %s", rec.Code, rec.Body.String())
	}
	decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write, body: `{"slug":"b","content":"abc"}`}), http.StatusCreated)
	_, msg = errorOf(t, put(`{}`), http.StatusBadRequest)
	if !strings.Contains(msg, "bytes_per_hour") {
		t.Fatalf("empty budget change: %s", msg)
	}
}

// TestUnavailableCarriesRetryAfter: a recall that gave up waiting for the
// index is 503 with the hint as Retry-After.
func TestUnavailableCarriesRetryAfter(t *testing.T) {
	rec := httptest.NewRecorder()
	err := memory.Errorf(memory.CodeUnavailable, "index is catching up, retry in 3 s")
	err.RetryAfter = 3 * time.Second
	api.WriteError(rec, err)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "3" {
		t.Fatalf("status %d, Retry-After %q; want 503, 3", rec.Code, rec.Header().Get("Retry-After"))
	}
}
