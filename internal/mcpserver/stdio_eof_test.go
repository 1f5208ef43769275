package mcpserver

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestServeStdioFinishesCallsAfterEOF pipes requests in and closes stdin at
// once, as `printf … | munin stdio` does: every call must still be answered
// with its real result, not "context canceled", and the write must persist.
func TestServeStdioFinishesCallsAfterEOF(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli", memory.RoleWrite)
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"piped/note","content":"written through a pipe"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := srv.ServeStdio(context.Background(), token, strings.NewReader(in), &out); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if !strings.Contains(out.String(), `"id":2`) || strings.Contains(out.String(), "isError") {
		t.Fatalf("remember over a closed pipe was not answered cleanly:\n%s", out.String())
	}
	if g, err := env.Svc.Get(context.Background(), key, service.GetRequest{Slug: "piped/note"}); err != nil || g.Content != "written through a pipe" {
		t.Fatalf("piped write not stored: %+v, %v", g, err)
	}
}

// TestServeStdioLastLineWithoutNewline: `printf` without a final newline
// still gets its last call answered, at once, and two calls sharing an id
// are both answered before stdin's end is let through.
func TestServeStdioLastLineWithoutNewline(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli", memory.RoleWrite)
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	call := func(slug string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"` + slug + `","content":"piped"}}}`
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		// mcp-go takes a line with a result for a response and never answers it.
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","result":{},"params":{"name":"remember","arguments":{"slug":"x","content":"y"}}}`,
		call("same/id-one"), call("same/id-two"), call("no/newline"),
	}, "\n") // no newline after the last call
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := srv.ServeStdio(ctx, token, strings.NewReader(in), &out); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("ServeStdio waited for an answer that never came")
	}
	for _, slug := range []string{"same/id-one", "same/id-two", "no/newline"} {
		if _, err := env.Svc.Get(context.Background(), key, service.GetRequest{Slug: slug}); err != nil {
			t.Errorf("%s not stored: %v\n%s", slug, err, out.String())
		}
	}
	if n := strings.Count(out.String(), `"id":7`); n != 3 {
		t.Errorf("%d answers with id 7, want 3:\n%s", n, out.String())
	}
}
