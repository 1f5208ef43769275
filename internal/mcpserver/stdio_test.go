package mcpserver

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestServeStdio runs the tools over a pipe with mcp-go's stdio client.
func TestServeStdio(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, _ := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	srv := New(env.Svc, Options{ValidateOutput: true, Logger: testLogger(t)})

	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, token, inR, outW)
		outW.Close()
	}()

	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	initialize(t, c)

	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	tools, err := c.ListTools(lctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"changes", "forget", "get", "history", "list", "recall", "remember", "review"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	rem, _ := callOK[service.WriteResult](t, c, "remember", map[string]any{"slug": "cli/note", "content": "over stdio"})
	if rem.Slug != "cli/note" || rem.Version != 1 {
		t.Fatalf("remember: %+v", rem)
	}
	got, _ := callOK[service.Entry](t, c, "get", map[string]any{"slug": "cli/note"})
	if got.Content != "over stdio" || got.Agent != "cli-agent" {
		t.Fatalf("get: %+v", got)
	}
	if msg := callErr(t, c, "get", map[string]any{"slug": "../x"}); !strings.HasPrefix(msg, "invalid: ") {
		t.Fatalf("bad slug over stdio: %q", msg)
	}

	// Closing the input ends ServeStdio cleanly.
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after its input closed")
	}
	cancel()
	c.Close()
}

// TestServeStdioStopsOnCancel: cancelling the context (SIGINT in `munin
// stdio`) ends ServeStdio without an error even while the input stays open.
func TestServeStdioStopsOnCancel(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, _ := env.Key(t, "ws", "proj", "cli-agent", memory.RoleRead)
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, token, inR, io.Discard) }()
	time.Sleep(50 * time.Millisecond) // let it start reading
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after cancel")
	}
}

// TestServeStdioRefusesAlteredText: over stdio no HTTP layer checks the
// body, and Go's decoder would store invalid UTF-8 and a lone surrogate
// escape as U+FFFD. Both are refused with invalid, and nothing is written.
func TestServeStdioRefusesAlteredText(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	call := func(id int, slug, content string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"` + slug + `","content":"` + content + `"}}}` + "\n"
	}
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n" +
		call(1, "surrogate", `x\ud800y`) + call(2, "bytes", "x\xffy") + call(3, "fine", "plain text")
	// stdin stays open until every call is answered: the test is about the
	// answers, not about how mcp-go ends a stream.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(context.Background(), token, inR, outW)
		outW.Close()
	}()
	go func() { _, _ = io.WriteString(inW, in) }()
	var out strings.Builder
	lines := bufio.NewScanner(outR)
	for answered := 0; answered < 4 && lines.Scan(); answered++ {
		out.WriteString(lines.Text() + "\n")
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"surrogate", "bytes"} {
		if v, err := env.Svc.Get(context.Background(), key, service.GetRequest{Slug: slug}); err == nil {
			t.Errorf("%s stored as %q instead of being refused", slug, v.Content)
		}
	}
	if _, err := env.Svc.Get(context.Background(), key, service.GetRequest{Slug: "fine"}); err != nil {
		t.Errorf("valid write after the refused ones: %v", err)
	}
	for _, want := range []string{"invalid: JSON text escapes half of a UTF-16 surrogate pair", "invalid: JSON text is not valid UTF-8"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdio output lacks %q:\n%s", want, out.String())
		}
	}
}
