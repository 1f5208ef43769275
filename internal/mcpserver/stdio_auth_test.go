package mcpserver

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// stdioSession serves stdio over pipes; send writes one line, answer reads one.
type stdioSession struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	init string // the answer to initialize
}

func startStdio(t *testing.T, srv *Server, token string) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdio(context.Background(), token, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	s := &stdioSession{in: inW, out: bufio.NewScanner(outR)}
	s.out.Buffer(nil, 1<<20)
	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	s.init = s.answer(t)
	return s
}

func (s *stdioSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatalf("write to stdio: %v", err)
	}
}

func (s *stdioSession) answer(t *testing.T) string {
	t.Helper()
	if !s.out.Scan() {
		t.Fatalf("stdio ended without an answer: %v", s.out.Err())
	}
	return s.out.Text()
}

func rememberLine(id, slug string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"` + slug + `","content":"x"}}}`
}

// TestServeStdioRechecksKey: a key revoked while stdio runs (as `munin key
// revoke` does, through the store) is refused on its next call, and that
// call writes nothing.
func TestServeStdioRechecksKey(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	s := startStdio(t, New(env.Svc, Options{Logger: testLogger(t)}), token)

	s.send(t, rememberLine("1", "before"))
	if a := s.answer(t); strings.Contains(a, `"isError":true`) {
		t.Fatalf("remember before the revocation: %s", a)
	}
	if err := env.Store.RevokeKey(context.Background(), key.First().ID); err != nil {
		t.Fatal(err)
	}
	s.send(t, rememberLine("2", "after"))
	a := s.answer(t)
	if !strings.Contains(a, `"isError":true`) || !strings.Contains(a, "unauthorized: key ") || !strings.Contains(a, "revoked") {
		t.Fatalf("remember after the revocation answered %s, want the tool error unauthorized: key … revoked", a)
	}
	_, reader := env.Key(t, "ws", "proj", "checker", memory.RoleRead)
	if _, err := env.Svc.Get(context.Background(), reader, service.GetRequest{Slug: "after"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("the refused remember stored something: %v", err)
	}
	if _, err := env.Svc.Get(context.Background(), reader, service.GetRequest{Slug: "before"}); err != nil {
		t.Fatalf("the remember before the revocation: %v", err)
	}
}

// TestServeStdioRefusesDuplicateKeys: over stdio, a line with a member name
// given twice (envelope or arguments, any depth) gets a JSON-RPC Invalid
// Request error naming it, with the request's id; nothing runs.
func TestServeStdioRefusesDuplicateKeys(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	s := startStdio(t, New(env.Svc, Options{Logger: testLogger(t)}), token)
	for _, tc := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","name":"remember","arguments":{"slug":"a","content":"x"}}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid: duplicate key \"name\" in the object at \"/params\""}}`},
		{`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"remember","arguments":{"slug":"b","content":"x","tags":["t"],"content":"y"}}}`,
			`{"jsonrpc":"2.0","id":"two","error":{"code":-32600,"message":"invalid: duplicate key \"content\" in the object at \"/params/arguments\""}}`},
	} {
		s.send(t, tc.line)
		if got := s.answer(t); got != tc.want {
			t.Errorf("answer\n%s\nwant\n%s", got, tc.want)
		}
	}
	s.send(t, rememberLine("3", "c")) // the session goes on
	if a := s.answer(t); !strings.Contains(a, `"id":3`) || strings.Contains(a, `"isError":true`) {
		t.Fatalf("remember after the refused lines: %s", a)
	}
	for _, slug := range []string{"a", "b"} {
		if _, err := env.Svc.Get(context.Background(), key, service.GetRequest{Slug: slug}); memory.ErrorCode(err) != memory.CodeNotFound {
			t.Errorf("%s: a refused line stored something: %v", slug, err)
		}
	}
}
