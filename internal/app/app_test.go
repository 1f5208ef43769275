package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// startServer runs the real server on a free loopback port over a temp data
// directory and returns its base URL and the bootstrap admin key.
func startServer(t *testing.T) (*App, string, string) {
	t.Helper()
	return serveWith(t, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// testPersistNap keeps a test server's close from waiting out the indexes'
// default nap of a second (search.DefaultPersistNap).
const testPersistNap = time.Millisecond

// serveWith serves an App opened with cfg on a loopback port until the test
// ends and returns it, its base URL and the first admin key.
func serveWith(t *testing.T, cfg Config) (*App, string, string) {
	t.Helper()
	cfg.Storage.DataDir, cfg.Server.Addr = t.TempDir(), "127.0.0.1:0"
	cfg.IndexPersistNap = testPersistNap
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token, err := a.Svc.Bootstrap(context.Background())
	if err != nil || token == "" {
		t.Fatalf("bootstrap: token %q, err %v", token, err)
	}
	return a, serve(t, a, listen(t)), token
}

// listen opens a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve runs a on ln until the test ends, then stops and closes it, and
// returns its base URL.
func serve(t *testing.T, a *App, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func connect(t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "app-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call runs a tool and decodes its structuredContent into out; it fails the
// test on a tool error unless wantErr is set, and returns the text.
func call(t *testing.T, c *client.Client, tool string, args map[string]any, out any) (string, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if !res.IsError && out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode structuredContent %s: %v", tool, raw, err)
		}
	}
	return text, res.IsError
}

func TestRealServerRoundTripOverMCP(t *testing.T) {
	_, base, token := startServer(t)
	c := connect(t, base, token)

	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !containsAll(got, "remember", "recall", "get", "list", "history", "forget", "review", "changes") || len(names) != 8 {
		t.Fatalf("tools = %s, want the eight of the contract", got)
	}

	var w1, w2 struct {
		Slug    string `json:"slug"`
		Version int    `json:"version"`
	}
	if text, isErr := call(t, c, "remember", map[string]any{"slug": "decisions/db-choice", "content": "We use SQLite with WAL for every Datenbank.", "tags": []string{"db"}}, &w1); isErr {
		t.Fatalf("remember: %s", text)
	}
	if text, isErr := call(t, c, "remember", map[string]any{"slug": "decisions/db-choice", "content": "We use SQLite in WAL mode; one writer per workspace file.", "title": "Database choice"}, &w2); isErr {
		t.Fatalf("remember v2: %s", text)
	}
	if w1.Version != 1 || w2.Version != 2 {
		t.Fatalf("versions %d, %d; want 1, 2", w1.Version, w2.Version)
	}

	var got struct {
		Slug          string `json:"slug"`
		Version       int    `json:"version"`
		Title         string `json:"title"`
		Content       string `json:"content"`
		Agent         string `json:"agent"`
		LatestVersion int    `json:"latest_version"`
	}
	call(t, c, "get", map[string]any{"slug": "decisions/db-choice"}, &got)
	if got.Version != 2 || got.LatestVersion != 2 || got.Title != "Database choice" || got.Agent != "first-admin" || !strings.Contains(got.Content, "one writer") {
		t.Fatalf("get latest = %+v", got)
	}
	call(t, c, "get", map[string]any{"slug": "decisions/db-choice", "version": 1}, &got)
	if got.Version != 1 || !strings.Contains(got.Content, "Datenbank") {
		t.Fatalf("get v1 = %+v", got)
	}

	var hits struct {
		Hits []struct {
			Slug    string `json:"slug"`
			Version int    `json:"version"`
			Snippet string `json:"snippet"`
		} `json:"hits"`
	}
	call(t, c, "recall", map[string]any{"query": "writer"}, &hits)
	if len(hits.Hits) != 1 || hits.Hits[0].Slug != "decisions/db-choice" || hits.Hits[0].Version != 2 || hits.Hits[0].Snippet == "" {
		t.Fatalf("recall = %+v", hits)
	}

	var hist struct {
		Versions []struct {
			Version int  `json:"version"`
			Deleted bool `json:"deleted"`
		} `json:"versions"`
	}
	call(t, c, "forget", map[string]any{"slug": "decisions/db-choice"}, nil)
	call(t, c, "history", map[string]any{"slug": "decisions/db-choice"}, &hist)
	if len(hist.Versions) != 3 || hist.Versions[0].Version != 3 || !hist.Versions[0].Deleted {
		t.Fatalf("history after forget = %+v", hist)
	}
	if text, isErr := call(t, c, "get", map[string]any{"slug": "decisions/db-choice"}, nil); !isErr || !strings.HasPrefix(text, "not_found:") {
		t.Fatalf("get after forget = %q (isError %v), want not_found", text, isErr)
	}
	hits.Hits = nil
	call(t, c, "recall", map[string]any{"query": "writer"}, &hits)
	if len(hits.Hits) != 0 {
		t.Fatalf("recall after forget = %+v, want nothing", hits)
	}
}

func TestAuthMatrixOnRealServer(t *testing.T) {
	a, base, admin := startServer(t)
	ctx := context.Background()
	other, _, err := a.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: "other", Project: "p"}, "stranger", memory.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	reader, _, err := a.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: "default", Project: "default"}, "reader", memory.RoleRead)
	if err != nil {
		t.Fatal(err)
	}
	call(t, connect(t, base, admin), "remember", map[string]any{"slug": "secret", "content": "only default/default sees this"}, nil)

	for _, tc := range []struct{ name, header string }{
		{"no key", ""},
		{"wrong key", "Bearer munin_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"not bearer", "Basic " + admin},
	} {
		req, _ := http.NewRequest("POST", base+"/mcp", bytes.NewBufferString(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: status %d, WWW-Authenticate %q; want 401 Bearer", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// Another project's key sees nothing of this project, even by exact slug.
	if text, isErr := call(t, connect(t, base, other), "get", map[string]any{"slug": "secret"}, nil); !isErr || !strings.HasPrefix(text, "not_found:") {
		t.Errorf("other project's key: get = %q, want not_found", text)
	}
	// A read key may read but not write.
	rc := connect(t, base, reader)
	if text, isErr := call(t, rc, "remember", map[string]any{"slug": "x", "content": "y"}, nil); !isErr || !strings.HasPrefix(text, "forbidden:") {
		t.Errorf("read key remember = %q, want forbidden", text)
	}
	if text, isErr := call(t, rc, "get", map[string]any{"slug": "secret"}, nil); isErr {
		t.Errorf("read key get = %q, want success", text)
	}
	if _, err := a.Svc.Get(ctx, mustKey(t, a, reader), service.GetRequest{Slug: "x"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("the read key's remember wrote something: %v", err)
	}
}

// mustKey authenticates token (a comma-separated key list) as the server does.
func mustKey(t *testing.T, a *App, token string) memory.Caller {
	t.Helper()
	k, err := a.Svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPrintClientConfig(t *testing.T) {
	var buf bytes.Buffer
	PrintClientConfig(&buf, "http://127.0.0.1:8080", service.FirstKeys{ServerAdmin: "munin_SERVER", Project: "munin_TOKEN"})
	out := buf.String()
	for _, want := range []string{
		`claude mcp add --transport http munin http://127.0.0.1:8080/mcp --header "Authorization: Bearer munin_TOKEN"`,
		`"Authorization": "Bearer munin_TOKEN"`,
		`"url": "http://127.0.0.1:8080/mcp"`,
		"Server-admin key",
		"  munin_SERVER\n",
		"http://127.0.0.1:8080/metrics",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("client config lacks %s\n%s", want, out)
		}
	}
	// The JSON block must parse as the JSON MCP clients take.
	start, end := strings.Index(out, "{"), strings.LastIndex(out, "}")
	var v map[string]any
	if err := json.Unmarshal([]byte(out[start:end+1]), &v); err != nil {
		t.Errorf("JSON block does not parse: %v", err)
	}
}

func containsAll(s string, words ...string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
