package httpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/reqlog"
)

// recorder remembers the status and size of a response for the request log
// and for panic recovery (which must not write a 500 after the headers went
// out). It forwards Flush, and Unwrap lets http.ResponseController reach the
// connection (SSE streams need both).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

// wrap returns w itself if it already is a recorder, so that recovery and the
// request log share one view of the response.
func wrap(w http.ResponseWriter) *recorder {
	if rec, ok := w.(*recorder); ok {
		return rec
	}
	return &recorder{ResponseWriter: w, status: http.StatusOK}
}

func (r *recorder) WriteHeader(code int) {
	// 1xx answers are informational; the real status comes after them.
	if !r.wrote && code >= 200 {
		r.status = code
		r.wrote = true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client; mcp-go detects SSE support by
// asserting http.Flusher on the writer it is given.
func (r *recorder) Flush() {
	r.wrote = true
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// recoverPanics turns a panic in any handler into a logged stack and a 500
// JSON answer, and keeps the server serving. http.ErrAbortHandler is passed
// on: it is how a handler asks net/http to drop the connection quietly.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := wrap(w)
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.Error("panic serving request",
				"method", r.Method, "path", memory.RedactKeys(r.URL.Path),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if rec.wrote {
				// Too late for a status; cut the response so the client
				// does not take a half answer for a whole one.
				panic(http.ErrAbortHandler)
			}
			api.WriteErrorStatus(rec, http.StatusInternalServerError, memory.CodeInternal, "internal error")
		}()
		next.ServeHTTP(rec, r)
	})
}

// logRequests writes one line per request: method, path, status, duration,
// bytes and the caller's agent name, or why its key list was refused. It never logs headers, the query string
// (tokens could be pasted there) or bodies (they are the users' memory), and
// a key pasted into the path is logged as munin_[redacted] (memory.RedactKeys).
// The same place counts the request for the metrics.
func logRequests(log *slog.Logger, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := wrap(w)
		ctx, info := reqlog.With(r.Context())
		r = r.WithContext(ctx)
		completed := false
		defer func() {
			status := rec.status
			if !completed && !rec.wrote {
				// A panic is unwinding; recovery (outside) answers 500.
				status = http.StatusInternalServerError
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			// All the line's fields fit in one array on the stack: growing
			// a slice for the caller's two was the line's largest allocation.
			var fields [9]slog.Attr
			attrs := append(fields[:0],
				slog.String("method", r.Method),
				slog.String("path", memory.RedactKeys(r.URL.Path)),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.Int64("bytes", rec.bytes),
				slog.String("remote", r.RemoteAddr),
			)
			if info.Agent != "" {
				attrs = append(attrs, slog.String("agent", info.Agent), slog.String("project", info.Project))
			}
			if info.Refused != "" {
				attrs = append(attrs, slog.String("refused", info.Refused))
			}
			logLine(r.Context(), log, level, attrs)
			m.HTTPRequest(routeOf(r.URL.Path), status)
		}()
		next.ServeHTTP(rec, r)
		completed = true
	})
}

// logLine logs the request line as log.LogAttrs would, without the
// caller's program counter: no handler of the server adds the source, and
// finding it (runtime.Callers) was a seventh of the line's CPU in the load
// test's profile.
func logLine(ctx context.Context, log *slog.Logger, level slog.Level, attrs []slog.Attr) {
	h := log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	rec := slog.NewRecord(time.Now(), level, "http request", 0)
	rec.AddAttrs(attrs...)
	_ = h.Handle(ctx, rec)
}

// routeOf names the part of the server a path belongs to, for metric labels
// (paths themselves would be unbounded).
func routeOf(path string) string {
	switch {
	case path == "/mcp":
		return "mcp"
	case strings.HasPrefix(path, "/api/"):
		return "api"
	case path == "/healthz" || path == "/readyz" || path == "/metrics":
		return "probe"
	}
	return "web"
}
