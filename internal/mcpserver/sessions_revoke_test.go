package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// fastSweep checks keys every 20 ms, so that a test waits little for a
// revocation to take effect.
var fastSweep = StreamChecks{RevokeSweep: 20 * time.Millisecond}

// revoke revokes the key of token (a caller of one key).
func (h *sessHarness) revoke(t *testing.T, token string) {
	t.Helper()
	c, err := h.env.Svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	if err := h.env.Svc.RevokeKey(context.Background(), c.First().ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
}

// waitSweeps waits (bounded) until n more revocation sweeps ran than when
// it was called: whatever a sweep would end is ended by then.
func waitSweeps(t *testing.T, srv *Server, n int64) {
	t.Helper()
	want := srv.ids.sweeps.Load() + n
	for i := 0; srv.ids.sweeps.Load() < want; i++ {
		if i == 400 {
			t.Fatalf("%d revocation sweeps, want %d", srv.ids.sweeps.Load(), want)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ended closes when body ends (the server ended the stream).
func ended(body io.Reader) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, body)
	}()
	return done
}

// TestRevokeEndsGETStreamsAndSessions: revoking a key ends its open GET
// stream (protocol 2025-11-25) and its sessions, with or without a stream,
// and mcp-go forgets them; the stream and session of another key of the
// same project stay.
func TestRevokeEndsGETStreamsAndSessions(t *testing.T) {
	h := newSessHarness(t, Options{StreamChecks: fastSweep})
	idA, idIdle, idB := h.open(t, h.tokA), h.open(t, h.tokA), h.open(t, h.tokB)
	getA, getB := h.stream(t, h.tokA, idA), h.stream(t, h.tokB, idB)
	if getA.StatusCode != http.StatusOK || getB.StatusCode != http.StatusOK {
		t.Fatalf("GET streams: %d, %d", getA.StatusCode, getB.StatusCode)
	}
	endA, endB := ended(getA.Body), ended(getB.Body)

	h.revoke(t, h.tokA)
	select {
	case <-endA:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream of the revoked key is still open after 10 s")
	}
	for i := 0; h.srv.ids.isLive(idA) || h.srv.ids.isLive(idIdle) || mcpgoHolds(t, h.srv, idA) || mcpgoHolds(t, h.srv, idIdle); i++ {
		if i == 400 {
			t.Fatalf("sessions of the revoked key: live %v %v, in mcp-go %v %v", h.srv.ids.isLive(idA), h.srv.ids.isLive(idIdle),
				mcpgoHolds(t, h.srv, idA), mcpgoHolds(t, h.srv, idIdle))
		}
		time.Sleep(25 * time.Millisecond)
	}
	if got := h.srv.ids.revokedSessions.Load(); got != 2 {
		t.Errorf("sessions ended by revocation: %d, want 2", got)
	}

	waitSweeps(t, h.srv, 2)
	select {
	case <-endB:
		t.Fatal("the GET stream of the other key ended")
	default:
	}
	if !h.srv.ids.isLive(idB) {
		t.Fatal("the session of the other key ended")
	}
	if got := h.streamsCounted(t, h.tokB); got != 2 { // key B's stream, counted for B and for the project
		t.Fatalf("streams counted for key B and its project: %d, want 2", got)
	}
	if a := h.send(t, http.MethodPost, h.tokB, idB, listBody); a.code != http.StatusOK {
		t.Fatalf("tools/list on the other key's session: %d %s", a.code, a.body)
	}
}

// TestRevokeEndsListenStream: revoking a key ends its open
// subscriptions/listen stream (protocol 2026-07-28) with the listen
// request's final result, as a shutdown does; the listen stream of another
// key stays open.
func TestRevokeEndsListenStream(t *testing.T) {
	h := newListenHarness(t, Options{StreamChecks: fastSweep})
	la := h.listen(t, h.tokA, 7)
	lb := h.listen(t, h.tokB, 8)
	waitListens(t, h.srv, 2)

	h.revoke(t, h.tokA)
	want := `{"id":7,"jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"}}`
	if got := la.next(t); got != want {
		t.Fatalf("last event of the revoked key's stream: %s\nwant %s", got, want)
	}
	if rest := la.next(t); rest != "" {
		t.Fatalf("an event after the final result: %s", rest)
	}
	waitListens(t, h.srv, 1)
	waitSweeps(t, h.srv, 2)
	if n := h.srv.OpenListenStreams(); n != 1 {
		t.Fatalf("%d open listen streams after the sweeps, want 1 (the other key's)", n)
	}
	if got := h.srv.ids.revokedListens.Load(); got != 1 {
		t.Fatalf("listen streams ended by revocation: %d, want 1", got)
	}
	// With no stream open, no sweep is armed.
	lb.close()
	waitListens(t, h.srv, 0)
	h.srv.ids.mu.Lock()
	armed := h.srv.ids.sweepTimer != nil
	h.srv.ids.mu.Unlock()
	if armed {
		t.Fatal("the revocation sweep is still armed with no stream open")
	}
}

// nextComment is the next SSE comment line of the stream (": …"); a
// stream that sends none within 10 s fails the test.
func (s *listenStream) nextComment(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for s.lines.Scan() {
			if line := s.lines.Text(); strings.HasPrefix(line, ":") {
				got <- line
				return
			}
		}
		got <- ""
	}()
	select {
	case line := <-got:
		return line
	case <-time.After(10 * time.Second):
		s.close()
		t.Fatal("listen stream: no comment line within 10 s")
		return ""
	}
}

// TestListenKeepAlive: an idle listen stream sends keep-alive comments,
// and its events still arrive whole after them (the final result on
// Close).
func TestListenKeepAlive(t *testing.T) {
	h := newListenHarness(t, Options{StreamChecks: StreamChecks{ListenKeepAlive: 20 * time.Millisecond}})
	l := h.listen(t, h.tokA, 3)
	for range 2 {
		if got := l.nextComment(t); got != ": ping" {
			t.Fatalf("comment line %q, want %q", got, ": ping")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	want := `{"id":3,"jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":3},"resultType":"complete"}}`
	if got := l.next(t); got != want {
		t.Fatalf("last event: %s\nwant %s", got, want)
	}
}

// TestListenKeepAliveBetweenEvents: a keep-alive is written only between
// events — never before the stream started, never inside an event whose
// bytes arrive in several writes.
func TestListenKeepAliveBetweenEvents(t *testing.T) {
	rec := httptest.NewRecorder()
	lw := &listenWriter{ResponseWriter: rec}
	if err := lw.ping(); err != nil || rec.Body.Len() != 0 {
		t.Fatalf("keep-alive before the stream started: %v, body %q", err, rec.Body.String())
	}
	lw.Header().Set("Content-Type", "text/event-stream")
	lw.WriteHeader(http.StatusOK)
	steps := []struct{ write, want string }{
		{"", ": ping\n\n"},
		{"event: message\ndata: {", ": ping\n\nevent: message\ndata: {"},
		{"}\n", ": ping\n\nevent: message\ndata: {}\n"},
		{"\n", ": ping\n\nevent: message\ndata: {}\n\n: ping\n\n"},
	}
	rec.Body.Reset()
	for _, s := range steps {
		if s.write != "" {
			if _, err := lw.Write([]byte(s.write)); err != nil {
				t.Fatal(err)
			}
		}
		if err := lw.ping(); err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != s.want {
			t.Fatalf("after writing %q and a keep-alive: %q, want %q", s.write, got, s.want)
		}
	}
}

// TestRevokeEndsStreamsOfEveryCallerOfTheKey: a listen stream of a caller
// of several keys ends when any of them is revoked, not only its first;
// the stream of a caller of the other key alone stays.
func TestRevokeEndsStreamsOfEveryCallerOfTheKey(t *testing.T) {
	h := newListenHarness(t, Options{StreamChecks: fastSweep})
	tokX, _ := h.env.Key(t, "ws", "q", "agent-x", memory.RoleRead)
	both := h.listen(t, tokX+","+h.tokB, 1)
	alone := h.listen(t, tokX, 2)
	if both.resp.StatusCode != http.StatusOK || alone.resp.StatusCode != http.StatusOK {
		t.Fatalf("listen: %d, %d", both.resp.StatusCode, alone.resp.StatusCode)
	}
	waitListens(t, h.srv, 2)

	h.revoke(t, h.tokB)
	if got := both.next(t); !strings.Contains(got, `"resultType":"complete"`) {
		t.Fatalf("last event of the stream holding the revoked key: %s", got)
	}
	waitListens(t, h.srv, 1)
	waitSweeps(t, h.srv, 2)
	if n := h.srv.OpenListenStreams(); n != 1 {
		t.Fatalf("%d open listen streams, want 1 (key X's alone)", n)
	}
}
