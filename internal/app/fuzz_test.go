package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"munin/internal/config"
	"munin/internal/memory"
)

// fuzzServer is the real HTTP surface over a temp data directory, called
// in-process (no sockets, so the fuzzer runs fast), with an open MCP session.
type fuzzServer struct {
	h       http.Handler
	token   string
	session string
}

func newFuzzServer(tb testing.TB) *fuzzServer {
	tb.Helper()
	// The limits per key would turn most fuzz inputs into 429s held back a
	// second: fuzzing is about what the server makes of any input.
	a, err := Open(Config{IndexPersistNap: testPersistNap, Config: config.Config{Server: config.Server{Addr: "127.0.0.1:8080"}, Storage: config.Storage{DataDir: tb.TempDir()}, Limits: config.Limits{RatePerKey: -1, MaxInFlightPerKey: -1, RecallRate: -1}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	token, err := a.Svc.Bootstrap(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	fs := &fuzzServer{h: a.Handler(), token: token}
	rec := fs.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`)
	fs.session = rec.Header().Get("Mcp-Session-Id")
	if rec.Code != 200 || fs.session == "" {
		tb.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	return fs
}

func (fs *fuzzServer) post(body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+fs.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if fs.session != "" {
		req.Header.Set("Mcp-Session-Id", fs.session)
	}
	rec := httptest.NewRecorder()
	fs.h.ServeHTTP(rec, req)
	return rec
}

// FuzzMCPHandler sends raw bodies to /mcp: whatever arrives, the answer is
// never a 5xx and never an internal error.
func FuzzMCPHandler(f *testing.F) {
	fs := newFuzzServer(f)
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"slug":"a","content":"b"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":1e308,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","name":"remember","arguments":{"slug":"a","content":"b"}}}`,
		`{`, `null`, ``, "\xff\xfe",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := fs.post(body)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "internal error") {
			t.Fatalf("internal error for %q: %s", body, rec.Body)
		}
	})
}

var fuzzTools = []string{"remember", "recall", "get", "list", "history", "forget", "review"}

// FuzzToolArguments calls each tool with arbitrary JSON arguments: the result
// is a success or a tool error whose text starts with a client-mistake code.
func FuzzToolArguments(f *testing.F) {
	fs := newFuzzServer(f)
	for i, seed := range []string{
		`{"slug":"decisions/db","content":"SQLite","tags":["db"],"expected_version":0}`,
		`{"query":"sqlite","limit":50,"tags":["db"]}`,
		`{"slug":"decisions/db","version":1}`,
		`{"prefix":"dec","tag":"db","limit":200,"cursor":"!!"}`,
		`{"slug":"../../etc/passwd","limit":-1}`,
		`{"slug":"a","expected_version":1e400}`,
		`{"action":"approve","id":"w.p.1","expected_version":2,"tags":["x"]}`,
	} {
		f.Add(uint8(i), seed)
	}
	f.Fuzz(func(t *testing.T, tool uint8, args string) {
		if !json.Valid([]byte(args)) {
			return // broken JSON is FuzzMCPHandler's business
		}
		name := fuzzTools[int(tool)%len(fuzzTools)]
		rec := fs.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`)
		if rec.Code == 400 && strings.Contains(rec.Body.String(), `"code":-32600,"message":"invalid: `) {
			return // refused before MCP, e.g. a lone UTF-16 surrogate escape or a duplicate name
		}
		if rec.Code != 200 {
			t.Fatalf("%s(%s): status %d %s", name, args, rec.Code, rec.Body)
		}
		var resp struct {
			Result *struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%s(%s): answer is not JSON: %s", name, args, rec.Body)
		}
		if resp.Error != nil || resp.Result == nil || !resp.Result.IsError {
			return // a JSON-RPC error (e.g. arguments not an object) or a success
		}
		text := ""
		if len(resp.Result.Content) > 0 {
			text = resp.Result.Content[0].Text
		}
		code, _, _ := strings.Cut(text, ": ")
		switch memory.Code(code) {
		case memory.CodeInvalid, memory.CodeNotFound, memory.CodeConflict, memory.CodeTooLarge, memory.CodeForbidden:
		default:
			t.Fatalf("%s(%s): tool error %q does not start with a client-mistake code", name, args, text)
		}
	})
}
