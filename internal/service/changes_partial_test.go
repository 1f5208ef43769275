package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
	"munin/internal/store"
)

// flakyFeed is the real store whose feed reads of some workspaces fail, as
// a cluster's during a failover.
type flakyFeed struct {
	*store.Store
	mu   sync.Mutex
	down map[string]error
}

func (f *flakyFeed) FeedRead(ctx context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	f.mu.Lock()
	err := f.down[ws]
	f.mu.Unlock()
	if err != nil {
		return memory.FeedPage{}, err
	}
	return f.Store.FeedRead(ctx, ws, q)
}

// set makes ws's reads fail with err (nil: read again).
func (f *flakyFeed) set(ws string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[ws] = err
}

// flakyEnv is a stack whose feed reads go through a flakyFeed; writes go
// through Env.Svc, reads through Svc.
type flakyEnv struct {
	*servicetest.Env
	Feed *flakyFeed
	Svc  *service.Service
}

func newFlakyEnv(t *testing.T) *flakyEnv {
	t.Helper()
	env := servicetest.New(t, service.Options{BudgetOff: true})
	f := &flakyFeed{Store: env.Store, down: map[string]error{}}
	svc := service.New(f, env.Index, service.Options{BudgetOff: true})
	t.Cleanup(func() { svc.Close() })
	return &flakyEnv{Env: env, Feed: f, Svc: svc}
}

// errMoving is what a cluster answers while a workspace's owner fails over.
var errMoving = memory.Errorf(memory.CodeUnavailable, "workspace beta is moving to another node; retry")

// TestChangesOneWorkspaceUnavailable: while workspace beta cannot be read,
// the caller's other workspace is answered, the answer names beta's
// projects as unavailable, and next_cursor keeps beta where it was — once
// beta answers again, a read from it brings every change of beta, none of
// acme again. since=now works the same way.
func TestChangesOneWorkspaceUnavailable(t *testing.T) {
	e := newFlakyEnv(t)
	tokA, a := e.Key(t, "acme", "one", "ann", memory.RoleWrite)
	tokB, b := e.Key(t, "beta", "two", "bob", memory.RoleWrite)
	tokC, bc := e.Key(t, "beta", "three", "bea", memory.RoleWrite)
	both := e.Caller(t, tokA, tokB, tokC)
	feedWrite(t, e.Env.Svc, a, "acme/one", "a1")
	feedWrite(t, e.Env.Svc, b, "beta/two", "b1")
	feedWrite(t, e.Env.Svc, bc, "beta/three", "c1")

	e.Feed.set("beta", errMoving)
	res, err := e.Svc.Changes(ctx, both, service.ChangesRequest{PerChange: true})
	if err != nil {
		t.Fatalf("one workspace unavailable failed the call: %v", err)
	}
	if got := lines(res.Changes); !slices.Equal(got, []string{"acme/one remember a1 v1"}) {
		t.Fatalf("changes %v, want acme's alone", got)
	}
	want := []service.Unavailable{
		{Project: "beta/two", Code: memory.CodeUnavailable, Message: "workspace beta is moving to another node; retry"},
		{Project: "beta/three", Code: memory.CodeUnavailable, Message: "workspace beta is moving to another node; retry"},
	}
	if !slices.Equal(res.Unavailable, want) {
		t.Fatalf("unavailable %+v, want %+v", res.Unavailable, want)
	}
	if body, _ := json.Marshal(res); !strings.Contains(string(body), `"unavailable":[{"project":"beta/two","code":"unavailable"`) {
		t.Errorf("the JSON answer does not name the unread projects: %s", body)
	}

	feedWrite(t, e.Env.Svc, a, "acme/one", "a2")
	feedWrite(t, e.Env.Svc, b, "beta/two", "b2")
	res, err = e.Svc.Changes(ctx, both, service.ChangesRequest{Since: res.NextCursor})
	if err != nil || !slices.Equal(lines(res.Changes), []string{"acme/one remember a2 v1"}) || len(res.Unavailable) != 2 {
		t.Fatalf("still down: %v %+v %v, want a2 and beta unavailable", lines(res.Changes), res.Unavailable, err)
	}
	now, err := e.Svc.Changes(ctx, both, service.ChangesRequest{Since: service.SinceNow})
	if err != nil || len(now.Unavailable) != 2 || now.NextCursor == "" {
		t.Fatalf("since=now with beta down: %+v %v, want a cursor and beta unavailable", now, err)
	}

	e.Feed.set("beta", nil)
	feedWrite(t, e.Env.Svc, b, "beta/two", "b3")
	back, err := e.Svc.Changes(ctx, both, service.ChangesRequest{Since: res.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"beta/two remember b1 v1", "beta/three remember c1 v1", "beta/two remember b2 v1", "beta/two remember b3 v1"}; !slices.Equal(lines(back.Changes), want) {
		t.Errorf("beta back: %v, want every change of beta and nothing of acme again: %v", lines(back.Changes), want)
	}
	if back.Unavailable != nil {
		t.Errorf("unavailable %+v once every workspace answers", back.Unavailable)
	}
	fromNow, err := e.Svc.Changes(ctx, both, service.ChangesRequest{Since: now.NextCursor})
	if err != nil || !slices.Equal(lines(fromNow.Changes), []string{"beta/two remember b3 v1"}) {
		t.Errorf("from since=now taken while beta was down: %v %v, want b3 alone", lines(fromNow.Changes), err)
	}
}

// TestChangesWhenWorkspacesFail: what fails the whole call — every
// workspace unavailable, one workspace's invalid (expired) cursor, a
// caller of one workspace — and what does not: one workspace's internal
// error, which the answer names without its detail.
func TestChangesWhenWorkspacesFail(t *testing.T) {
	e := newFlakyEnv(t)
	tokA, a := e.Key(t, "acme", "one", "ann", memory.RoleWrite)
	tokB, _ := e.Key(t, "beta", "two", "bob", memory.RoleWrite)
	both, onlyB := e.Caller(t, tokA, tokB), e.Caller(t, tokB)
	feedWrite(t, e.Env.Svc, a, "acme/one", "a1")

	e.Feed.set("beta", errors.New("disk I/O error at /var/secret/beta.db"))
	res, err := e.Svc.Changes(ctx, both, service.ChangesRequest{})
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("beta failing internally: %v %v, want acme's change", lines(res.Changes), err)
	}
	if want := []service.Unavailable{{Project: "beta/two", Code: memory.CodeInternal, Message: "internal error"}}; !slices.Equal(res.Unavailable, want) {
		t.Errorf("unavailable %+v, want %+v (no detail of the failure)", res.Unavailable, want)
	}

	for _, tc := range []struct {
		name   string
		caller memory.Caller
		acme   error
		beta   error
		want   memory.Code
	}{
		{"every workspace unavailable", both, errMoving, errMoving, memory.CodeUnavailable},
		{"the one workspace unavailable", onlyB, nil, errMoving, memory.CodeUnavailable},
		{"one workspace's cursor expired", both, nil, memory.Errorf(memory.CodeInvalid, "expired or foreign cursor: workspace beta was replaced"), memory.CodeInvalid},
		{"expired beside an unavailable one", both, errMoving, memory.Errorf(memory.CodeInvalid, "expired or foreign cursor"), memory.CodeInvalid},
	} {
		e.Feed.set("acme", tc.acme)
		e.Feed.set("beta", tc.beta)
		res, err := e.Svc.Changes(ctx, tc.caller, service.ChangesRequest{})
		if memory.ErrorCode(err) != tc.want {
			t.Errorf("%s: %v %+v, want the call to fail with %s", tc.name, err, res, tc.want)
		}
	}
}
