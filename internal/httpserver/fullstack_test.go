package httpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"munin/internal/api"
	"munin/internal/mcpserver"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// initBody is a plain MCP initialize request.
const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// newFullStack is the server over the real service with the real REST API
// and MCP server behind it. Everything logged — the request log and the
// default logger the store and the error answers use — goes to s.log.
func newFullStack(t *testing.T, cfg Config) *stack {
	t.Helper()
	lb := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	old := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(old) })
	cfg.Logger = logger
	env := servicetest.New(t, service.Options{})
	mcp := mcpserver.New(env.Svc, mcpserver.Options{Logger: logger})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mcp.Close(ctx)
	})
	return &stack{env: env, srv: New(cfg, env.Svc, mcp.HTTPHandler(), api.New(env.Svc)), log: lb}
}

// reply is one response read whole.
type reply struct {
	status int
	header http.Header
	body   string
}

// call sends one request to the served stack; auth is the whole
// Authorization value ("" sends none). A body is sent as JSON; a POST to
// /mcp also accepts an event stream, as MCP clients do.
func (s *stack) call(t *testing.T, method, path, auth, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// bearer is the Authorization value carrying tokens as one comma list.
func bearer(tokens ...string) string { return "Bearer " + strings.Join(tokens, ",") }

// errorBody is the exact JSON error answer of code and message.
func errorBody(code, message string) string {
	return `{"error":{"code":"` + code + `","message":"` + message + `"}}` + "\n"
}

// logLines returns the lines of the log that contain all of subs.
func logLines(log string, subs ...string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		ok := line != ""
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}
