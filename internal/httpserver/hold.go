package httpserver

import (
	"net/http"

	"munin/internal/service"
)

// holdHandlerRefusals holds back a 429 that the handler itself answers (a
// write over the project's budget or pace) the way the key limits hold
// their refusals (DefaultRefusalHold): the admission slot is given back at
// once, the answer goes out after the hold. A client that honours
// Retry-After never notices; one that retries at once in a loop is slowed
// to a request per connection and hold, instead of making the server read
// and decode a body of up to 1 MiB fifty times a second only to refuse it
// again (the hostile-load test's attack 2). REST only: an MCP tool's refusal
// is a tool result, and MCP's streams must reach the writer unwrapped.
func holdHandlerRefusals(l *keyLimits, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := service.CallerFrom(r.Context())
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&holdingWriter{ResponseWriter: w, r: r, l: l, id: c.First().ID}, r)
	})
}

// holdingWriter waits the hold before it writes a 429 header.
type holdingWriter struct {
	http.ResponseWriter
	r    *http.Request
	l    *keyLimits
	id   int64
	seen bool // a header was written
}

// Unwrap lets http.ResponseController reach the real writer.
func (h *holdingWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *holdingWriter) WriteHeader(code int) {
	if !h.seen && code == http.StatusTooManyRequests {
		h.l.holdBack(h.r, h.id)
	}
	h.seen = true
	h.ResponseWriter.WriteHeader(code)
}

func (h *holdingWriter) Write(b []byte) (int, error) {
	if !h.seen {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}
