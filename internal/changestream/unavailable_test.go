package changestream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
	"munin/internal/store"
)

// downStore is the real store whose feed reads of one workspace fail while
// it is down, as a cluster's during a failover.
type downStore struct {
	*store.Store
	mu   sync.Mutex
	down string
}

func (d *downStore) FeedRead(ctx context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	d.mu.Lock()
	down := d.down == ws
	d.mu.Unlock()
	if down {
		return memory.FeedPage{}, memory.Errorf(memory.CodeUnavailable, "workspace %s is moving to another node; retry", ws)
	}
	return d.Store.FeedRead(ctx, ws, q)
}

func (d *downStore) set(ws string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = ws
}

// TestStreamGoesOnWhileAWorkspaceIsUnavailable: over the real service,
// while workspace beta cannot be read the stream goes on with acme's
// changes and says which projects it misses (event unavailable); once
// beta answers again it sends beta's changes without waiting for another
// write (a single server does not poll), and the cursors it sent skip
// none of them.
func TestStreamGoesOnWhileAWorkspaceIsUnavailable(t *testing.T) {
	env := servicetest.New(t, service.Options{BudgetOff: true})
	ds := &downStore{Store: env.Store}
	svc := service.New(ds, env.Index, service.Options{BudgetOff: true})
	t.Cleanup(func() { svc.Close() })
	tokA, a := env.Key(t, "acme", "one", "ann", memory.RoleWrite)
	tokB, b := env.Key(t, "beta", "two", "bob", memory.RoleWrite)
	caller := env.Caller(t, tokA, tokB)
	s := New(svc, Options{Heartbeat: time.Hour, Poll: -1, Retry: 10 * time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Serve(w, r, caller); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	write := func(c memory.Caller, project, slug string) {
		t.Helper()
		if _, err := env.Svc.Remember(context.Background(), c, service.RememberRequest{Project: project, Slug: slug, Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}

	c := open(t, srv.URL)
	c.must() // the start cursor
	ds.set("beta")
	write(b, "beta/two", "b1")
	write(a, "acme/one", "a1")
	e := c.r.NextOf(t, "unavailable")
	var d struct{ Unavailable []Unavailable }
	if err := json.Unmarshal([]byte(e.Data), &d); err != nil || e.HasID ||
		!slices.Equal(d.Unavailable, []Unavailable{{Project: "beta/two", Code: memory.CodeUnavailable, Message: "workspace beta is moving to another node; retry"}}) {
		t.Fatalf("unavailable event %+v (%v), want beta/two, without an id", e, err)
	}
	ids, slugs := c.changes(1)
	if slugs[0] != "a1" {
		t.Fatalf("while beta is down the stream sent %s, want acme's a1", slugs[0])
	}

	ds.set("")
	e = c.r.NextOf(t, "unavailable")
	if err := json.Unmarshal([]byte(e.Data), &d); err != nil || d.Unavailable == nil || len(d.Unavailable) != 0 {
		t.Fatalf("event %+v (%v), want an empty unavailable list once beta answers", e, err)
	}
	ids2, slugs := c.changes(1)
	if slugs[0] != "b1" {
		t.Fatalf("once beta answers the stream sent %s, want b1", slugs[0])
	}
	// The id sent after a1 kept beta's position: from it, b1 comes.
	for _, tc := range []struct{ from, want string }{{ids[0], "b1"}, {ids2[0], ""}} {
		res, err := svc.Changes(context.Background(), caller, service.ChangesRequest{Since: tc.from})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, ch := range res.Changes {
			got += ch.Slug
		}
		if got != tc.want {
			t.Errorf("from an event's id: %q, want %q", got, tc.want)
		}
	}
}
