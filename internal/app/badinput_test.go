package app

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"munin/internal/service"
)

// TestRawHTTPBadInputOnRealServer covers the bad input that never reaches a
// tool: broken bodies and oversized requests, sent as raw HTTP to /mcp on the
// real server. Each gets a clear 4xx or JSON-RPC error, and nothing is written.
func TestRawHTTPBadInputOnRealServer(t *testing.T) {
	a, base, token := startServer(t)
	session := rawInitialize(t, base, token)
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"big","content":"` + strings.Repeat("x", 2<<20) + `"}}}`

	for _, tc := range []struct {
		name       string
		body       string
		wantStatus int
		wantText   string
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/call",`, 400, "not valid json"},
		{"not an object", `"remember"`, 400, ""},
		{"oversized body", big, 413, "too_large"},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"tools/destroy","params":{}}`, 200, "not found"},
		{"unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wipe","arguments":{}}}`, 200, "wipe"},
		{"wrong argument type", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remember","arguments":{"slug":["a"],"content":"x"}}}`, 200, "invalid: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if !strings.Contains(strings.ToLower(string(body)), strings.ToLower(tc.wantText)) {
				t.Fatalf("answer %s does not name the problem (%q)", body, tc.wantText)
			}
		})
	}
	key := mustKey(t, a, token)
	page, err := a.Svc.List(context.Background(), key, service.ListRequest{})
	if entries := page.Entries; err != nil || len(entries) != 0 {
		t.Fatalf("bad input wrote entries: %+v, %v", page.Entries, err)
	}
}

// rawInitialize opens an MCP session by hand and returns its id.
func rawInitialize(t *testing.T, base, token string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, id)
	}
	return id
}
