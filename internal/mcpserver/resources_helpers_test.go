package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// rawSession sends JSON-RPC requests by hand, so a test sees what the wire
// carries and mcp-go's client would drop: error codes, error data and the
// caching hints of 2026-07-28 results.
type rawSession struct {
	url, token, era, sid string
	next                 int
}

// rpcReply is a JSON-RPC answer as it came over the wire.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// newRawSession opens a session for protocol era: 2026-07-28 has none (each
// request carries its version in _meta), earlier versions initialize one.
func newRawSession(t *testing.T, url, token, era string) *rawSession {
	t.Helper()
	s := &rawSession{url: url, token: token, era: era}
	if mcp.IsModernProtocol(era) {
		return s
	}
	resp := s.post(t, "initialize", map[string]any{"protocolVersion": era, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}}, true)
	s.sid = resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	if s.sid == "" {
		t.Fatal("initialize answered no session id")
	}
	s.post(t, "notifications/initialized", nil, false).Body.Close()
	return s
}

// call sends method with params and returns the decoded answer.
func (s *rawSession) call(t *testing.T, method string, params map[string]any) rpcReply {
	t.Helper()
	resp := s.post(t, method, params, true)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read answer: %v", method, err)
	}
	// 2026-07-28 answers an invalid-params error with 400 and the JSON-RPC
	// error as the body.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%s: status %d: %s", method, resp.StatusCode, body)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body = lastSSEData(body)
	}
	var r rpcReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: answer %s: %v", method, body, err)
	}
	if resp.StatusCode == http.StatusBadRequest && r.Error == nil {
		t.Fatalf("%s: status 400 without an error: %s", method, body)
	}
	if (r.Error == nil) == (r.Result == nil) {
		t.Fatalf("%s: answer %s has neither or both of result and error", method, body)
	}
	return r
}

// ok is call for a request that must succeed; it decodes the result into out.
func (s *rawSession) ok(t *testing.T, method string, params map[string]any, out any) json.RawMessage {
	t.Helper()
	r := s.call(t, method, params)
	if r.Error != nil {
		t.Fatalf("%s %v: error %d %q", method, params, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: result %s: %v", method, r.Result, err)
		}
	}
	return r.Result
}

func (s *rawSession) post(t *testing.T, method string, params map[string]any, request bool) *http.Response {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if request {
		s.next++
		msg["id"] = s.next
	}
	if mcp.IsModernProtocol(s.era) {
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": s.era,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"}}
	}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", s.era)
	}
	if mcp.IsModernProtocol(s.era) {
		req.Header.Set("Mcp-Protocol-Version", s.era)
		req.Header.Set("Mcp-Method", method)
		if uri, ok := params["uri"].(string); ok {
			req.Header.Set("Mcp-Name", uri)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// lastSSEData is the data of the last event of an SSE body: the answer
// comes after any notifications.
func lastSSEData(body []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = bytes.Clone(bytes.TrimSpace(d))
		}
	}
	return last
}
