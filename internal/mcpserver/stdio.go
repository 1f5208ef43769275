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
// until in ends or ctx is cancelled; both are a normal stop and return nil.
// A token that does not authenticate is refused before anything is read.
// Every call runs under the token's key: a stdio client is one process on
// the operator's machine, so there are no per-request credentials, but the
// key is checked again on every tool call (the store's key cache makes that
// a map lookup), so a key revoked while stdio runs acts no more.
//
// mcp-go keeps one process-wide stdio session, so only one ServeStdio may run
// per process at a time.
func (s *Server) ServeStdio(ctx context.Context, token string, in io.Reader, out io.Writer) error {
	key, err := s.svc.Authenticate(ctx, token)
	if err != nil {
		return err
	}
	auth := stdioAuth{svc: s.svc, token: token, first: key}
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(context.WithValue(service.WithKey(ctx, key), stdioAuthKey{}, auth), finishOnEOFKey{}, true)
	})
	drain := newDrainingStdio(ctx, in, out)
	err = stdio.Listen(ctx, drain, answerWriter{d: drain})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // cancelled by the caller (SIGINT, shutdown): not a failure
	}
	return err
}

type finishOnEOFKey struct{}

type stdioAuthKey struct{}

// stdioAuth authenticates the token of a stdio session again for each call.
type stdioAuth struct {
	svc   *service.Service
	token string
	first memory.Key // the key at start, to name it when it is gone
}

// callerKey is the key a tool call runs under: over HTTP the one the auth
// middleware put in ctx for this request, over stdio the session's token
// authenticated now.
func callerKey(ctx context.Context) (memory.Key, error) {
	auth, ok := ctx.Value(stdioAuthKey{}).(stdioAuth)
	if !ok {
		return service.KeyFrom(ctx)
	}
	key, err := auth.svc.Authenticate(ctx, auth.token)
	if memory.ErrorCode(err) == memory.CodeUnauthorized {
		// Keys are revoked, never deleted: a key that authenticated at
		// start and does not now was revoked.
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "key %d of agent %q in %s was revoked; this munin stdio acts for it no more",
			auth.first.ID, auth.first.Agent, auth.first.Project)
	}
	return key, err
}

// finishOnEOF reports whether a call came over stdio. mcp-go cancels every
// request when stdin ends, so `printf '…' | munin stdio` would see its calls
// fail with "context canceled"; stdio calls therefore run to completion and
// Listen waits for them before returning.
func finishOnEOF(ctx context.Context) bool {
	v, _ := ctx.Value(finishOnEOFKey{}).(bool)
	return v
}
