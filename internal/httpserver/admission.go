package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/metrics"
)

// DefaultMaxInFlight is the default limit of requests served at once. Past
// the saturation point more concurrency only adds queueing (latency and
// memory) on two cores, so the excess is turned away at once instead.
const DefaultMaxInFlight = 64

// admit is admission control: at most limit requests are served at once;
// the excess is answered 429 with Retry-After immediately, before the body
// is read, so accepted requests keep their speed. MCP's GET stream is
// long-lived and idle, so it is not counted; neither are the probes.
func admit(limit int, m *metrics.Metrics, next http.Handler) http.Handler {
	var slots chan struct{} // nil: no limit, but still counted in flight
	if limit > 0 {
		slots = make(chan struct{}, limit)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
				var once sync.Once
				free := func() { once.Do(func() { <-slots }) }
				defer free()
				r = r.WithContext(context.WithValue(r.Context(), slotKey{}, free))
			default:
				m.Rejected()
				// The connection stays open: net/http discards a small unread
				// body itself and closes only when a large one is left.
				w.Header().Set("Retry-After", "1")
				api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable,
					fmt.Sprintf("server is at its limit of %d requests in flight; retry after 1 second", limit))
				return
			}
		}
		m.InFlight(1)
		defer m.InFlight(-1)
		next.ServeHTTP(w, r)
	})
}

// slotKey carries the function that gives a request's admission slot back.
type slotKey struct{}

// freeSlot gives the request's admission slot back before it ends: a
// refusal that is held back (see limitPerKey) must not keep a slot that an
// accepted request of another key could use.
func freeSlot(ctx context.Context) {
	if free, ok := ctx.Value(slotKey{}).(func()); ok {
		free()
	}
}

func exempt(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	case "/mcp":
		return r.Method == http.MethodGet
	}
	return false
}
