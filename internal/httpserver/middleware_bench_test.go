package httpserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"munin/internal/metrics"
	"munin/internal/reqlog"
)

// BenchmarkLogRequests is the front door's log line and metric for one
// authenticated MCP call, written as the server writes it (through
// reqlog.Safe into a text handler), the handler behind it doing nothing.
func BenchmarkLogRequests(b *testing.B) {
	log := slog.New(reqlog.Safe(slog.NewTextHandler(io.Discard, nil)))
	h := logRequests(log, metrics.New(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqlog.NoteCaller(r.Context(), "claude-code", "team/notes")
		w.WriteHeader(http.StatusOK)
	}))
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "127.0.0.1:50312"
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
