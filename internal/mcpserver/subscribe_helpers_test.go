package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// subHarness is a server with a subscriber key A (read, ws/p), a writer W
// (write, ws/p) and Q, the writer of ws/q, which A holds no key for.
type subHarness struct {
	*sessHarness
	w, q       memory.Caller
	tokW, tokQ string
}

func newSubHarness(t *testing.T) *subHarness {
	t.Helper()
	h := newSessHarness(t, Options{})
	tokW, w := h.env.Key(t, "ws", "p", "writer", memory.RoleWrite)
	tokQ, q := h.env.Key(t, "ws", "q", "other", memory.RoleWrite)
	h.srv.subs.every = 50 * time.Millisecond // resync markers and readiness come quickly
	return &subHarness{sessHarness: h, w: w, q: q, tokW: tokW, tokQ: tokQ}
}

func (h *subHarness) remember(t *testing.T, c memory.Caller, project, slug string) {
	t.Helper()
	if _, err := h.env.Svc.Remember(context.Background(), c, service.RememberRequest{Project: project, Slug: slug, Content: "text of " + slug}); err != nil {
		t.Fatalf("remember %s/%s: %v", project, slug, err)
	}
}

func (h *subHarness) forget(t *testing.T, c memory.Caller, project, slug string) {
	t.Helper()
	if _, err := h.env.Svc.Forget(context.Background(), c, service.ForgetRequest{Project: project, Slug: slug}); err != nil {
		t.Fatalf("forget %s/%s: %v", project, slug, err)
	}
}

// session2025 opens a 2025-11-25 session as token.
func (h *subHarness) session2025(t *testing.T, token string) *rawSession {
	t.Helper()
	return newRawSession(t, h.url, token, "2025-11-25")
}

// events reads the data of the SSE events of body on a goroutine.
type events struct{ ch chan string }

func readEvents(body io.Reader) *events {
	e := &events{ch: make(chan string, 4096)}
	go func() {
		defer close(e.ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				e.ch <- d
			}
		}
	}()
	return e
}

// note is a notification as it arrives.
type note struct {
	Method string `json:"method"`
	Params struct {
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
}

// next is the next notification; a stream that ends or sends nothing for
// 10 s fails the test.
func (e *events) next(t *testing.T) note {
	t.Helper()
	select {
	case d, ok := <-e.ch:
		if !ok {
			t.Fatal("stream ended")
		}
		var n note
		if err := json.Unmarshal([]byte(d), &n); err != nil {
			t.Fatalf("event %s: %v", d, err)
		}
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return note{}
	}
}

// expect reads the next notification and checks its method and uri.
func (e *events) expect(t *testing.T, method, uri string) note {
	t.Helper()
	n := e.next(t)
	if n.Method != method || n.Params.URI != uri {
		t.Fatalf("got %s %q, want %s %q", n.Method, n.Params.URI, method, uri)
	}
	return n
}

const (
	updated     = "notifications/resources/updated"
	listChanged = "notifications/resources/list_changed"
)

// waitFor polls cond (bounded: 10 s) and fails with what if it never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 1000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// registryEmpty waits until the registry holds nothing and no watch is open.
func (h *subHarness) registryEmpty(t *testing.T) {
	t.Helper()
	waitFor(t, "registry empty and no watchers", func() bool {
		n, u := h.srv.subs.size()
		return n == 0 && u == 0 && h.env.Svc.Watchers() == 0
	})
}

// allReady waits until every subscriber may be delivered to (a listen
// stream becomes ready after two maintenance rounds).
func (h *subHarness) allReady(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "subscribers ready", func() bool {
		r := h.srv.subs
		r.mu.Lock()
		defer r.mu.Unlock()
		ready := 0
		for _, s := range r.subs {
			if s.ready {
				ready++
			}
		}
		return ready == n
	})
}

// timeout bounds one wait for an event.
func timeout() <-chan time.Time { return time.After(10 * time.Second) }
