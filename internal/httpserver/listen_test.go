package httpserver

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// streamKinds are the two MCP streams: GET /mcp (protocol up to
// 2025-11-25) and subscriptions/listen (2026-07-28, a POST whose answer is a
// stream).
var streamKinds = []string{"get", "listen"}

// openStream opens a stream of kind on the fake MCP handler of s.
func (s *stack) openStream(t *testing.T, kind string) *http.Response {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, s.base+"/mcp", nil)
	if kind == "listen" {
		body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{"toolsListChanged":true}}}`
		r, _ = http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "subscriptions/listen")
	}
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s stream: %d", kind, resp.StatusCode)
	}
	return resp
}

// TestListenHoldsNoRequestSlot: an open listen stream, like a GET stream,
// holds none of the server's requests in flight: with --max-inflight 1
// another request of the same key still passes.
func TestListenHoldsNoRequestSlot(t *testing.T) {
	ended := make(chan string, 1)
	s := newStack(t, Config{MaxInFlight: 1, RefusalHold: -1}, sse(0, 50*time.Millisecond, ended), nil)
	s.serve(t)
	resp := s.openStream(t, "listen")
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if a := s.call(t, http.MethodGet, "/api/v1/entries", bearer(s.token), ""); a.status != http.StatusOK {
		t.Fatalf("a request next to an open listen stream at --max-inflight 1: %d %s", a.status, a.body)
	}
}
