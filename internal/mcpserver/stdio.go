package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// ServeStdio serves the tools as newline-delimited JSON-RPC on in and out
// until in ends or ctx is cancelled; both are a normal stop and return nil. Every call runs under key, which
// the caller (`munin stdio --key`) has authenticated: a stdio client is one
// process on the operator's machine, so there are no per-request credentials.
//
// mcp-go keeps one process-wide stdio session, so only one ServeStdio may run
// per process at a time.
func (s *Server) ServeStdio(ctx context.Context, key memory.Key, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(service.WithKey(ctx, key), finishOnEOFKey{}, true)
	})
	drain := newDrainingStdio(ctx, in)
	err := stdio.Listen(ctx, drain, answerWriter{out: out, d: drain})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // cancelled by the caller (SIGINT, shutdown): not a failure
	}
	return err
}

type finishOnEOFKey struct{}

// finishOnEOF reports whether a call came over stdio. mcp-go cancels every
// request when stdin ends, so `printf '…' | munin stdio` would see its calls
// fail with "context canceled"; stdio calls therefore run to completion and
// Listen waits for them before returning.
func finishOnEOF(ctx context.Context) bool {
	v, _ := ctx.Value(finishOnEOFKey{}).(bool)
	return v
}
