package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/service"
	"munin/internal/servicetest"
)

// harness is the real stack behind HTTPHandler on an httptest server.
type harness struct {
	env *servicetest.Env
	srv *Server
	url string
}

func newHarness(t *testing.T, opts service.Options) *harness {
	t.Helper()
	env := servicetest.New(t, opts)
	srv := New(env.Svc, Options{ValidateOutput: true, Logger: testLogger(t)})
	url := httptestServer(t, testAuth(env.Svc, srv.HTTPHandler()))
	return &harness{env: env, srv: srv, url: url + Endpoint}
}

// httptestServer serves h and returns its base URL.
func httptestServer(t *testing.T, h http.Handler) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// testLogger sends the server's log lines to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testAuth stands in for the HTTP server's auth middleware: bearer token →
// key in the context, 401 otherwise.
func testAuth(svc *service.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key, err := svc.Authenticate(r.Context(), token)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), key)))
	})
}

// client connects an initialized MCP client with token ("" sends no Authorization).
func (h *harness) client(t testing.TB, token string) *client.Client {
	t.Helper()
	return connect(t, h.url, token)
}

func connect(t testing.TB, url, token string) *client.Client {
	t.Helper()
	c, _ := connectInit(t, url, token)
	return c
}

// connectInit is connect that also returns the initialize answer.
func connectInit(t testing.TB, url, token string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	return connectAs(t, url, token, "")
}

// connectAs is connectInit asking for protocol version ("": mcp-go's
// client tries 2026-07-28's server/discover first).
func connectAs(t testing.TB, url, token, version string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, initializeAs(t, c, version)
}

func initialize(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	return initializeAs(t, c, "")
}

func initializeAs(t testing.TB, c *client.Client, version string) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "munin-test", Version: "1"}
	req.Params.ProtocolVersion = version
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "munin" {
		t.Fatalf("server name %q, want munin", res.ServerInfo.Name)
	}
	return res
}

// call runs a tool and fails the test on a transport or JSON-RPC error.
func call(t testing.TB, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := callRaw(c, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func callRaw(c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// callOK runs a tool that must succeed, validates its structured content
// against the tool's output schemas (validateResult) and decodes it
// strictly into R (no unknown fields, every field of R present).
func callOK[R any](t testing.TB, c *client.Client, name string, args map[string]any) (R, string) {
	t.Helper()
	res := call(t, c, name, args)
	text := resultText(t, res)
	if res.IsError {
		t.Fatalf("%s %v: tool error %q", name, args, text)
	}
	validateResult(t, name, res.StructuredContent)
	var out R
	decodeExact(t, res.StructuredContent, &out)
	return out, text
}

// callErr runs a tool that must fail with a tool error and returns its text.
func callErr(t testing.TB, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	res := call(t, c, name, args)
	text := resultText(t, res)
	if !res.IsError {
		t.Fatalf("%s %v: want a tool error, got success %q", name, args, text)
	}
	if res.StructuredContent != nil {
		t.Fatalf("%s: error result carries structured content %v", name, res.StructuredContent)
	}
	return text
}

// wantError checks a tool error's text: it starts with want[0] (the code)
// and names each of want[1:].
func wantError(t testing.TB, msg string, want []string) {
	t.Helper()
	if !strings.HasPrefix(msg, want[0]) {
		t.Errorf("error %q does not start with %q", msg, want[0])
	}
	for _, w := range want[1:] {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not name %q", msg, w)
		}
	}
}

func resultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// decodeExact decodes v (structured content as the client received it) into
// out, failing on unknown fields and on fields of out that are missing.
func decodeExact(t testing.TB, v any, out any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal structured content: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	// Round trip: every field of out must have been present (and arrays not null).
	back, _ := json.Marshal(out)
	var want, got map[string]any
	json.Unmarshal(raw, &got)
	json.Unmarshal(back, &want)
	for k, wv := range want {
		gv, ok := got[k]
		if !ok {
			t.Fatalf("structured content %s lacks field %q", raw, k)
		}
		if gv == nil && wv != nil {
			t.Fatalf("structured content %s: field %q is null", raw, k)
		}
	}
	if bytes.Contains(raw, []byte(":null")) {
		t.Fatalf("structured content %s has a null", raw)
	}
}
