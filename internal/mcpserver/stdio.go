package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// ServeStdio serves the tools as newline-delimited JSON-RPC on in and out
// until in ends or ctx is cancelled; both are a normal stop and return nil.
// tokens is one key or a comma-separated list (one agent, several
// projects); a list that does not authenticate is refused before anything
// is read. Every call runs under those keys: a stdio client is one process
// on the operator's machine, so there are no per-request credentials, but
// the keys are checked again on every tool call (the store's key cache
// makes that a map lookup), so a key revoked while stdio runs acts no more.
//
// mcp-go keeps one process-wide stdio session, so only one ServeStdio may run
// per process at a time.
func (s *Server) ServeStdio(ctx context.Context, tokens string, in io.Reader, out io.Writer) error {
	c, err := s.svc.Authenticate(ctx, tokens)
	if err != nil {
		return err
	}
	auth := stdioAuth{svc: s.svc, tokens: tokens, first: c}
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(context.WithValue(service.WithCaller(ctx, c), stdioAuthKey{}, auth), finishOnEOFKey{}, true)
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

// stdioAuth authenticates the keys of a stdio session again for each call.
type stdioAuth struct {
	svc    *service.Service
	tokens string
	first  memory.Caller // the keys at start, to name the one that is gone
}

// callerOf is the caller a tool call runs as: over HTTP the one the auth
// middleware put in ctx for this request, over stdio the session's keys
// authenticated now.
func callerOf(ctx context.Context) (memory.Caller, error) {
	auth, ok := ctx.Value(stdioAuthKey{}).(stdioAuth)
	if !ok {
		return service.CallerFrom(ctx)
	}
	c, err := auth.svc.Authenticate(ctx, auth.tokens)
	if memory.ErrorCode(err) == memory.CodeUnauthorized {
		return memory.Caller{}, auth.revoked(ctx, err)
	}
	return c, err
}

// revoked explains why keys that authenticated at start do not now: keys
// are revoked, never deleted. The operator gave stdio these keys, so the
// answer names the revoked one (id, agent, project) rather than only its
// place in the list, as the service's answer to an HTTP request does.
func (a stdioAuth) revoked(ctx context.Context, err error) error {
	n := len(a.first.Keys())
	for _, k := range a.first.Keys() {
		if _, kerr := a.svc.KeyByID(ctx, k.ID); memory.ErrorCode(kerr) == memory.CodeUnauthorized {
			if n == 1 {
				return memory.Errorf(memory.CodeUnauthorized, "key %d of agent %q in %s was revoked; this munin stdio acts for it no more", k.ID, k.Agent, k.Project)
			}
			return memory.Errorf(memory.CodeUnauthorized, "key %d of agent %q in %s was revoked; this munin stdio acts for its %d keys no more", k.ID, k.Agent, k.Project, n)
		}
	}
	// A revoked key that gave way to a higher one for the same project.
	return memory.Errorf(memory.CodeUnauthorized, "%s; this munin stdio acts for its keys no more", strings.TrimPrefix(memory.PublicMessage(err), "unauthorized: "))
}

// finishOnEOF reports whether a call came over stdio. mcp-go cancels every
// request when stdin ends, so `printf '…' | munin stdio` would see its calls
// fail with "context canceled"; stdio calls therefore run to completion and
// Listen waits for them before returning.
func finishOnEOF(ctx context.Context) bool {
	v, _ := ctx.Value(finishOnEOFKey{}).(bool)
	return v
}
