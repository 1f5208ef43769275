package httpserver

import (
	"context"
	"net/http"
	"time"
)

// streaming lets GET requests (the standalone SSE stream of MCP Streamable
// HTTP up to protocol 2025-11-25) and subscriptions/listen requests (its
// successor in 2026-07-28, a POST) live as long as the client listens: it
// clears the write deadline the server set for ordinary requests
// (WriteTimeout), and it ends the stream when the server shuts down.
// ReadTimeout needs no such care: once the request is read (bufferBody reads
// a POST's body whole), net/http clears the read deadline for its
// background read.
func streaming(streams *streamCloser, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && !isMCPListen(r) {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// An error means the writer cannot change deadlines (e.g. a test
		// recorder); the stream then simply keeps the server's timeout.
		_ = rc.SetWriteDeadline(time.Time{})
		ctx, cancel := streams.bind(r.Context())
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// streamCloser ends open streams when the server shuts down: Shutdown waits
// for active connections to go idle, and an SSE stream never does on its own.
// Ordinary requests are not cancelled, so writes in flight finish (drain).
type streamCloser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newStreamCloser() *streamCloser {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamCloser{ctx: ctx, cancel: cancel}
}

// bind returns a child of ctx that is also cancelled when the server shuts down.
func (s *streamCloser) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// closeAll cancels every stream, current and future; registered with
// http.Server.RegisterOnShutdown.
func (s *streamCloser) closeAll() { s.cancel() }

// endChangeStreams ends the change streams (isStream, not MCP's: its route
// has streaming) when the server shuts down, as streaming does for MCP. Their
// write deadline is their own: changestream sets one for every write.
func endChangeStreams(streams *streamCloser, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) || r.URL.Path == "/mcp" {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := streams.bind(r.Context())
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
