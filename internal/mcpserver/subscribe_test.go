package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// TestSubscribe2025: a 2025-11-25 session subscribed to an entry hears
// notifications/resources/updated on its GET stream when another key
// writes it; subscribed to the project, it hears of every write there, and
// a new slug or a forget adds list_changed; after resources/unsubscribe
// the entry's writes no longer reach it; once the session ends nothing of
// it is left.
func TestSubscribe2025(t *testing.T) {
	h := newSubHarness(t)
	h.remember(t, h.w, "ws/p", "notes/a")
	s := h.session2025(t, h.tokA)
	const entry, project = "munin://ws/p/notes/a", "munin://ws/p"
	s.ok(t, "resources/subscribe", map[string]any{"uri": entry}, nil)
	ev := readEvents(h.stream(t, h.tokA, s.sid).Body)

	h.remember(t, h.w, "ws/p", "notes/a") // version 2
	ev.expect(t, updated, entry)

	s.ok(t, "resources/subscribe", map[string]any{"uri": project}, nil)
	h.remember(t, h.w, "ws/p", "notes/b") // a new slug
	ev.expect(t, updated, project)
	ev.expect(t, listChanged, "")
	h.forget(t, h.w, "ws/p", "notes/b")
	ev.expect(t, updated, project)
	ev.expect(t, listChanged, "")

	s.ok(t, "resources/unsubscribe", map[string]any{"uri": entry}, nil)
	h.remember(t, h.w, "ws/p", "notes/a") // version 3: the project only
	ev.expect(t, updated, project)
	s.ok(t, "resources/unsubscribe", map[string]any{"uri": project}, nil)
	if n, _ := h.srv.subs.size(); n != 0 || h.env.Svc.Watchers() != 0 {
		t.Errorf("after unsubscribing everything: %d subscribers, %d watchers; want none", n, h.env.Svc.Watchers())
	}

	s.ok(t, "resources/subscribe", map[string]any{"uri": entry}, nil)
	if a := h.send(t, http.MethodDelete, h.tokA, s.sid, ""); a.code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", a.code, a.body)
	}
	h.registryEmpty(t)
}

// TestSubscribeForeignProject: a URI of a project the caller holds no key
// for gets the same answer as one of a project that does not exist, and
// the same as any other subscribe; it never fires when its holder writes
// there, and costs no watch (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
// Other schemes (the conformance suite's test://watched-resource) and
// malformed munin URIs are accepted and inert.
func TestSubscribeForeignProject(t *testing.T) {
	h := newSubHarness(t)
	s := h.session2025(t, h.tokA)
	foreign := s.call(t, "resources/subscribe", map[string]any{"uri": "munin://ws/q/secret"})
	missing := s.call(t, "resources/subscribe", map[string]any{"uri": "munin://ws/nope/secret"})
	if foreign.Error != nil || missing.Error != nil || string(foreign.Result) != string(missing.Result) {
		t.Fatalf("foreign project %s %v, missing project %s %v: want the same answer", foreign.Result, foreign.Error, missing.Result, missing.Error)
	}
	for _, u := range []string{"test://watched-resource", "munin://WS/p/x", "munin://ws/p/"} {
		if r := s.call(t, "resources/subscribe", map[string]any{"uri": u}); r.Error != nil || string(r.Result) != string(foreign.Result) {
			t.Errorf("subscribe %s: %s %v, want %s", u, r.Result, r.Error, foreign.Result)
		}
	}
	if n := h.env.Svc.Watchers(); n != 0 {
		t.Errorf("%d watchers for URIs the caller cannot read; want 0", n)
	}
	s.ok(t, "resources/subscribe", map[string]any{"uri": "munin://ws/p/notes/sentinel"}, nil)
	ev := readEvents(h.stream(t, h.tokA, s.sid).Body)

	h.remember(t, h.q, "ws/q", "secret")
	h.remember(t, h.q, "ws/q", "secret")
	h.remember(t, h.w, "ws/p", "notes/sentinel")
	// The first thing the stream carries is about the sentinel: nothing of
	// ws/q came before it.
	ev.expect(t, updated, "munin://ws/p/notes/sentinel")
}

// TestSubscriptionBound: a session holds at most MaxSubscriptionsPerSession
// URIs; one more drops its oldest, which then no longer fires.
func TestSubscriptionBound(t *testing.T) {
	h := newSubHarness(t)
	s := h.session2025(t, h.tokA)
	uri := func(i int) string { return "munin://ws/p/bound/" + itoa(i) }
	for i := range MaxSubscriptionsPerSession + 1 {
		s.ok(t, "resources/subscribe", map[string]any{"uri": uri(i)}, nil)
	}
	if n, u := h.srv.subs.size(); n != 1 || u != MaxSubscriptionsPerSession {
		t.Fatalf("%d subscribers with %d URIs; want 1 with %d", n, u, MaxSubscriptionsPerSession)
	}
	ev := readEvents(h.stream(t, h.tokA, s.sid).Body)
	h.remember(t, h.w, "ws/p", "bound/0") // dropped: nothing
	h.remember(t, h.w, "ws/p", "bound/1")
	n := ev.next(t)
	if n.Method == listChanged { // bound/0 is new in ws/p, where the session subscribes
		n = ev.next(t)
	}
	if n.Method != updated || n.Params.URI != uri(1) {
		t.Fatalf("got %s %q, want updated %s (the oldest, %s, was dropped)", n.Method, n.Params.URI, uri(1), uri(0))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestSubscribeRevokedKey: a subscriber whose key is revoked is dropped by
// the next key check, and its watches stop.
func TestSubscribeRevokedKey(t *testing.T) {
	h := newSubHarness(t)
	s := h.session2025(t, h.tokA)
	s.ok(t, "resources/subscribe", map[string]any{"uri": "munin://ws/p/notes/a"}, nil)
	if h.env.Svc.Watchers() != 1 {
		t.Fatalf("%d watchers, want 1", h.env.Svc.Watchers())
	}
	a := h.env.Caller(t, h.tokA)
	if err := h.env.Store.RevokeKey(context.Background(), a.First().ID); err != nil {
		t.Fatal(err)
	}
	r := h.srv.subs
	r.mu.Lock()
	for _, s := range r.subs {
		s.checked = s.checked.Add(-subscribeKeyCheck) // due now
	}
	r.mu.Unlock()
	h.registryEmpty(t)
	if r.revoked.Load() != 1 {
		t.Errorf("revoked counter %d, want 1", r.revoked.Load())
	}
}
