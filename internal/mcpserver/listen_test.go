package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
)

// listenBody is a subscriptions/listen request (protocol 2026-07-28) with
// JSON-RPC id id, asking for tools/list_changed.
func listenBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}},"notifications":{"toolsListChanged":true}}}`, id)
}

// newListenHarness is newSessHarness on a server whose mcp-go honours a
// listen for tools/list_changed. Munin itself declares no notification a
// listen could ask for yet (resources without subscriptions, tools without
// listChanged), and mcp-go ends a listen that honours nothing at once; the
// gate, the bounds and the shutdown under test are Munin's either way.
func newListenHarness(t *testing.T, opts Options) *sessHarness {
	t.Helper()
	return newSessHarnessWith(t, opts, func(srv *Server) {
		srv.mcp = server.NewMCPServer("munin", "test", server.WithToolCapabilities(true))
		srv.http = server.NewStreamableHTTPServer(srv.mcp,
			server.WithEndpointPath(Endpoint),
			server.WithHTTPContextFunc(carryKey),
			server.WithDisableLocalhostProtection(true),
			server.WithSessionIdManagerResolver(sessionResolver{srv.ids}),
		)
	})
}

// listenStream is an open raw listen stream.
type listenStream struct {
	resp   *http.Response
	lines  *bufio.Scanner
	cancel context.CancelFunc
}

// listen sends a listen request as token and returns the response; a 200
// stream is read up to its acknowledgement.
func (h *sessHarness) listen(t *testing.T, token string, id int) *listenStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(listenBody(id)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
	resp, err := streamClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("listen: %v", err)
	}
	s := &listenStream{resp: resp, lines: bufio.NewScanner(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	if resp.StatusCode == http.StatusOK {
		if ev := s.next(t); !strings.Contains(ev, string(mcp.MethodNotificationSubscriptionsAcknowledged)) {
			t.Fatalf("listen: first event is not the acknowledgement: %s", ev)
		}
	}
	return s
}

// streamClient has no timeout: a stream lives until it is closed; every
// read of one is bounded by the server ending it or by next's deadline.
var streamClient = &http.Client{}

// next is the data of the next event; "" at the end of the stream. A
// stream that sends nothing for 10 s fails the test.
func (s *listenStream) next(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for s.lines.Scan() {
			if data, ok := strings.CutPrefix(s.lines.Text(), "data: "); ok {
				got <- data
				return
			}
		}
		got <- ""
	}()
	select {
	case ev := <-got:
		return ev
	case <-time.After(10 * time.Second):
		s.close() // ends the reader
		t.Fatal("listen stream: no event within 10 s")
		return ""
	}
}

func (s *listenStream) close() { s.cancel(); s.resp.Body.Close() }

// waitListens waits (bounded) until the server counts n open listen streams.
func waitListens(t *testing.T, srv *Server, n int) {
	t.Helper()
	for i := 0; srv.OpenListenStreams() != n; i++ {
		if i == 400 {
			t.Fatalf("%d open listen streams, want %d", srv.OpenListenStreams(), n)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestListenStreamsPerKey: with one stream per key, a key's second listen
// stream is refused with 429, Retry-After and a JSON-RPC error answering its
// id while the first is open, and accepted once the first closed. The first
// is opened by mcp-go's own 2026-07-28 client.
func TestListenStreamsPerKey(t *testing.T) {
	h := newListenHarness(t, Options{MaxStreamsPerKey: 1})
	c, err := client.NewStreamableHttpClient(h.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.tokA}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	acked := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationSubscriptionsAcknowledged) {
			acked <- struct{}{}
		}
	})
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("first listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		stop()
		t.Fatal("the first listen was not acknowledged within 10 s")
	}
	waitListens(t, h.srv, 1)

	second := h.listen(t, h.tokA, 42)
	if second.resp.StatusCode != http.StatusTooManyRequests || second.resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("second listen of the key: %d, Retry-After %q; want 429, 10", second.resp.StatusCode, second.resp.Header.Get("Retry-After"))
	}
	var answer struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(second.resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	want := "unavailable: a key of this request already has 1 open streams on /mcp (GET and subscriptions/listen; its limit); close one and retry in 10s"
	if answer.ID != 42 || answer.Error.Code != -32000 || answer.Error.Message != want {
		t.Fatalf("refusal: %+v", answer)
	}
	if got := h.srv.SessionStats().RefusedStreams; got != 1 {
		t.Errorf("refused streams counted %d, want 1", got)
	}
	// Another key of the project has a stream of its own.
	h.listen(t, h.tokB, 1).close()

	stop() // the client goes away: the count drops
	waitListens(t, h.srv, 0)
	if third := h.listen(t, h.tokA, 43); third.resp.StatusCode != http.StatusOK {
		t.Fatalf("listen after the first closed: %d", third.resp.StatusCode)
	}
	waitListens(t, h.srv, 1)
}

// TestListenSharesBoundWithGETStreams: a key's GET stream (protocol
// 2025-11-25) and its listen streams are counted together.
func TestListenSharesBoundWithGETStreams(t *testing.T) {
	h := newListenHarness(t, Options{MaxStreamsPerKey: 1})
	id := h.open(t, h.tokA)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := h.request(t, ctx, http.MethodGet, h.tokA, id, "")
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", get.StatusCode)
	}
	if l := h.listen(t, h.tokA, 1); l.resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("listen next to the key's GET stream: %d, want 429", l.resp.StatusCode)
	}
	cancel()
	for i := 0; ; i++ { // the GET stream's count drops once its handler returns
		l := h.listen(t, h.tokA, 2)
		if l.resp.StatusCode == http.StatusOK {
			break
		}
		l.close()
		if i == 200 {
			t.Fatalf("listen after the GET stream closed: %d", l.resp.StatusCode)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestListenProjectBound: the keys of one project together hold at most
// ProjectStreamKeys times one key's streams, listen streams included.
func TestListenProjectBound(t *testing.T) {
	h := newListenHarness(t, Options{MaxStreamsPerKey: 1})
	for i := range ProjectStreamKeys {
		tok, _ := h.env.Key(t, "ws", "p", fmt.Sprintf("agent-%d", i), memory.RoleRead)
		if l := h.listen(t, tok, i); l.resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d of the project: %d", i, l.resp.StatusCode)
		}
	}
	l := h.listen(t, h.tokA, 9)
	if l.resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("listen past the project's bound: %d, want 429", l.resp.StatusCode)
	}
	var answer struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.NewDecoder(l.resp.Body).Decode(&answer)
	if !strings.Contains(answer.Error.Message, fmt.Sprintf("project ws/p already have %d open streams", ProjectStreamKeys)) {
		t.Fatalf("refusal does not name the project's bound: %q", answer.Error.Message)
	}
}

// TestListenEndsOnClose: Close ends an open listen stream with the listen
// request's final result (resultType complete, tagged with its id), and the
// count drops.
func TestListenEndsOnClose(t *testing.T) {
	h := newListenHarness(t, Options{})
	l := h.listen(t, h.tokA, 7)
	if l.resp.StatusCode != http.StatusOK || l.resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("listen: %d, X-Accel-Buffering %q", l.resp.StatusCode, l.resp.Header.Get("X-Accel-Buffering"))
	}
	waitListens(t, h.srv, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	want := `{"id":7,"jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"}}`
	if got := l.next(t); got != want {
		t.Fatalf("last event: %s\nwant %s", got, want)
	}
	if rest := l.next(t); rest != "" {
		t.Fatalf("an event after the final result: %s", rest)
	}
	waitListens(t, h.srv, 0)
	// A listen opened after Close ends at once, with its result.
	late := h.listen(t, h.tokA, 8)
	if got := late.next(t); !strings.Contains(got, `"resultType":"complete"`) {
		t.Fatalf("listen after close: %s", got)
	}
}

// TestListenEndsWhenTheServerCancelsIt: the HTTP server ends streams on
// shutdown by cancelling their requests (httpserver's streaming); the
// listen stream still ends with its final result.
func TestListenEndsWhenTheServerCancelsIt(t *testing.T) {
	h := newListenHarness(t, Options{})
	shutdown, stop := context.WithCancel(context.Background())
	defer stop()
	h.url = httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer context.AfterFunc(shutdown, cancel)()
		testAuth(h.env.Svc, h.srv.HTTPHandler()).ServeHTTP(w, r.WithContext(ctx))
	})) + Endpoint
	l := h.listen(t, h.tokA, 5)
	waitListens(t, h.srv, 1)
	stop()
	want := `{"id":5,"jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":5},"resultType":"complete"}}`
	if got := l.next(t); got != want {
		t.Fatalf("last event: %s\nwant %s", got, want)
	}
	waitListens(t, h.srv, 0)
}
