package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"munin/internal/service"
)

// TestDuplicateKeysAreRefused: a JSON member name given twice — in the
// JSON-RPC envelope, in the tool arguments, in a batch, in a REST body,
// also differing only in case — is invalid: 400 naming the key, nothing
// runs and nothing is stored. Go's decoder would take the last value, while
// a gateway reading the first would see another call than Munin runs.
func TestDuplicateKeysAreRefused(t *testing.T) {
	a, base, token := startServer(t)
	session := rawInitialize(t, base, token)
	for _, tc := range []struct {
		name, body, wantKey, wantID string
	}{
		{"tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","name":"remember","arguments":{"slug":"a","content":"x"}}}`, `"name"`, "1"},
		{"tool name, case", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"get","Name":"remember","arguments":{"slug":"a","content":"x"}}}`, `"Name"`, `"x"`},
		{"method", `{"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"x"}}}`, `"method"`, "2"},
		{"argument", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"x","slug":"b"}}}`, `"slug"`, "3"},
		{"escaped argument", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"x","sl\u0075g":"b"}}}`, `"slug"`, "4"},
		{"id itself", `{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"x"}}}`, `"id"`, "null"},
		{"in a batch", `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"x","tags":["t"],"tags":[]}}}]`, `"tags"`, "null"},
	} {
		t.Run("mcp "+tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			status, body := do(t, req)
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil || status != 400 {
				t.Fatalf("status %d, answer %s; want 400 with a JSON-RPC error", status, body)
			}
			if resp.Error.Code != -32600 || !strings.HasPrefix(resp.Error.Message, "invalid: duplicate key "+tc.wantKey) || string(resp.ID) != tc.wantID {
				t.Fatalf("answer %s; want code -32600, id %s and a message naming %s", body, tc.wantID, tc.wantKey)
			}
		})
	}
	t.Run("rest", func(t *testing.T) {
		req, _ := http.NewRequest("POST", base+"/api/v1/entries", strings.NewReader(`{"slug":"a","content":"x","content":"y"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		status, body := do(t, req)
		if status != 400 || !strings.Contains(body, `"invalid"`) || !strings.Contains(body, `duplicate key \"content\"`) {
			t.Fatalf("status %d, answer %s; want 400 invalid naming content", status, body)
		}
	})
	key := mustKey(t, a, token)
	page, err := a.Svc.List(context.Background(), key, service.ListRequest{})
	if entries := page.Entries; err != nil || len(entries) != 0 {
		t.Fatalf("a refused request wrote entries: %+v, %v", page.Entries, err)
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
