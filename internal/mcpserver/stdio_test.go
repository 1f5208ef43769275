package mcpserver

import (
	"context"
	"io"
	"slices"
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
	_, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	srv := New(env.Svc, Options{ValidateOutput: true, Logger: testLogger(t)})

	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(ctx, key, inR, outW)
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
	if want := []string{"forget", "get", "history", "list", "recall", "remember"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	rem, _ := callOK[rememberResult](t, c, "remember", map[string]any{"slug": "cli/note", "content": "over stdio"})
	if rem.Slug != "cli/note" || rem.Version != 1 {
		t.Fatalf("remember: %+v", rem)
	}
	got, _ := callOK[getResult](t, c, "get", map[string]any{"slug": "cli/note"})
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
	_, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleRead)
	srv := New(env.Svc, Options{Logger: testLogger(t)})
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, key, inR, io.Discard) }()
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
