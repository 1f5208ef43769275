package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"munin/internal/memory"
	"munin/internal/reqlog/logtest"
	"munin/internal/service"
	"munin/internal/servicetest"
)

const (
	initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
)

// sessHarness serves HTTPHandler with chosen Options to raw HTTP requests
// from two read keys of the same project, A and B.
type sessHarness struct {
	env        *servicetest.Env
	srv        *Server
	url        string
	tokA, tokB string
}

func newSessHarness(t *testing.T, opts Options) *sessHarness {
	t.Helper()
	return newSessHarnessWith(t, opts, nil)
}

// newSessHarnessWith is newSessHarness with prepare (if not nil) run on the
// server before it serves.
func newSessHarnessWith(t *testing.T, opts Options, prepare func(*Server)) *sessHarness {
	t.Helper()
	env := servicetest.New(t, service.Options{})
	tokA, _ := env.Key(t, "ws", "p", "agent-a", memory.RoleRead)
	tokB, _ := env.Key(t, "ws", "p", "agent-b", memory.RoleRead)
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv := New(env.Svc, opts)
	if prepare != nil {
		prepare(srv)
	}
	url := httptestServer(t, testAuth(env.Svc, srv.HTTPHandler()))
	// Registered after the HTTP server's cleanup, so it runs first: ends the
	// sweeper and any stream still open.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return &sessHarness{env: env, srv: srv, url: url + Endpoint, tokA: tokA, tokB: tokB}
}

var rawClient = &http.Client{Timeout: 30 * time.Second}

// request sends one request to /mcp; session "" sends no Mcp-Session-Id.
func (h *sessHarness) request(t testing.TB, ctx context.Context, method, token, session, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	return resp
}

// answer is one response read whole; an SSE stream (a GET that was let
// through) is closed at once and its body left empty.
type answer struct {
	code   int
	header http.Header
	body   string
}

func (h *sessHarness) send(t testing.TB, method, token, session, body string) answer {
	t.Helper()
	resp := h.request(t, context.Background(), method, token, session, body)
	defer resp.Body.Close()
	a := answer{code: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && method == http.MethodGet {
		return a
	}
	b, _ := io.ReadAll(resp.Body)
	a.body = string(b)
	return a
}

// open initializes a session with token and returns its id.
func (h *sessHarness) open(t testing.TB, token string) string {
	t.Helper()
	a := h.send(t, http.MethodPost, token, "", initBody)
	id := a.header.Get("Mcp-Session-Id")
	if a.code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", a.code, id, a.body)
	}
	return id
}

// stream opens a GET stream that stays open until the test ends (or the
// server ends it); it returns the response.
func (h *sessHarness) stream(t *testing.T, token, session string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := (&http.Client{}).Do(req) // no timeout: a stream lasts
	if err != nil {
		t.Fatalf("GET stream: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// mcpgoSessions counts the per-session entries mcp-go keeps: its idle
// clocks and active sessions (StreamableHTTPServer) and the sessions the MCP
// server registered. The maps are private; reflection reaches them so the
// tests can prove a refused id leaves nothing there. If an mcp-go upgrade
// renames them, this fails and names the field to look for.
func mcpgoSessions(t testing.TB, s *Server) int {
	t.Helper()
	n := 0
	for _, m := range mcpgoMaps(t, s) {
		m.Range(func(_, _ any) bool { n++; return true })
	}
	return n
}

// mcpgoHolds reports whether any of mcp-go's per-session maps holds id.
func mcpgoHolds(t testing.TB, s *Server, id string) bool {
	t.Helper()
	for _, m := range mcpgoMaps(t, s) {
		if _, ok := m.Load(id); ok {
			return true
		}
	}
	return false
}

func mcpgoMaps(t testing.TB, s *Server) []*sync.Map {
	t.Helper()
	return []*sync.Map{
		syncMapField(t, s.http, "sessionLastActive"),
		syncMapField(t, s.http, "activeSessions"),
		syncMapField(t, s.mcp, "sessions"),
	}
}

func syncMapField(t testing.TB, v any, name string) *sync.Map {
	t.Helper()
	f := reflect.ValueOf(v).Elem().FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeOf(sync.Map{}) {
		t.Fatalf("mcp-go's %T has no sync.Map field %s any more; update mcpgoMaps", v, name)
	}
	return (*sync.Map)(unsafe.Pointer(f.UnsafeAddr()))
}

// logBuffer collects log lines written from many goroutines.
type logBuffer = logtest.Buffer

func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// projectSessions is how many live sessions (and tickets) project p holds.
func (s *sessionIDs) projectSessions(p memory.ProjectRef) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.projects[p]; h != nil {
		return h.lru.Len() + h.pending
	}
	return 0
}

// streamsCounted is the sum of the open streams counted for the keys of
// tokens and for their projects (each key and project once).
func (h *sessHarness) streamsCounted(t testing.TB, tokens ...string) int {
	t.Helper()
	keys := map[int64]bool{}
	projects := map[memory.ProjectRef]bool{}
	for _, tok := range tokens {
		c, err := h.env.Svc.Authenticate(context.Background(), tok)
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		for _, k := range c.Keys() {
			keys[k.ID], projects[k.Project] = true, true
		}
	}
	n := 0
	for id := range keys {
		n += h.srv.ids.keyStreams.Busy(strconv.FormatInt(id, 10))
	}
	for p := range projects {
		n += h.srv.ids.projectStreams.Busy(p)
	}
	return n
}
