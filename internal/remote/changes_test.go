package remote_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/remote"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// feedOwner serves the store in dir behind remote.Handler with project ref.
func feedOwner(t *testing.T, dir string, ref memory.ProjectRef) (url string, stop func()) {
	t.Helper()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureProject(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	reg := search.NewRegistry(st, search.Options{})
	srv := httptest.NewServer(remote.Handler(service.NewOwnerBudgeted(st, st, service.Options{}), reg,
		remote.ServerOptions{Secret: secret, Node: dir, Owns: func(context.Context, string, int64) error { return nil }}))
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			srv.Close()
			_ = reg.Close()
			_ = st.Close()
		}
	}
	t.Cleanup(stop)
	return srv.URL, stop
}

// TestChangesAcrossAFailover: an entry node reads a workspace's feed at its
// owner; after the file moves to another owner (as a replica restores it),
// the cursor reads on there without a change lost or repeated; another
// entry node of the cluster accepts the cursor; a node with another
// cluster secret refuses it as invalid.
func TestChangesAcrossAFailover(t *testing.T) {
	ctx := context.Background()
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	dirA, dirB := t.TempDir(), t.TempDir()
	urlA, stopA := feedOwner(t, dirA, ref)
	var owner atomic.Pointer[string]
	owner.Store(&urlA)
	control, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = control.Close() })
	entry := func(clusterSecret string) *service.Service {
		r := &remote.Router{Client: &remote.Client{Secret: clusterSecret},
			Route: func(context.Context, string) (remote.Target, error) {
				return remote.Target{URL: *owner.Load(), Epoch: 1}, nil
			}}
		svc := service.New(service.Split{ControlStore: control, DataStore: r}, r, service.Options{BudgetAtOwner: r, SearchLogOff: true})
		t.Cleanup(func() { svc.Close() })
		return svc
	}
	svc := entry(secret)
	token, _, err := svc.CreateKey(ctx, ref, "ann", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	write := func(slug string) {
		if _, err := svc.Remember(ctx, c, service.RememberRequest{Slug: slug, Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	write("two")
	first, err := svc.Changes(ctx, c, service.ChangesRequest{Limit: 1})
	if err != nil || len(first.Changes) != 1 || first.Changes[0].Slug != "one" {
		t.Fatalf("first page at owner A: %+v %v", first, err)
	}

	// Failover: A stops; its file (with its identity and ids) is B's now.
	stopA()
	b, err := os.ReadFile(filepath.Join(dirA, "team.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirB, "team.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	urlB, _ := feedOwner(t, dirB, ref)
	owner.Store(&urlB)
	write("three")
	for name, node := range map[string]*service.Service{"the same entry node": svc, "another entry node": entry(secret)} {
		res, err := node.Changes(ctx, c, service.ChangesRequest{Since: first.NextCursor})
		if err != nil || len(res.Changes) != 2 || res.Changes[0].Slug != "two" || res.Changes[1].Slug != "three" {
			t.Errorf("%s after the failover: %+v %v, want two and three", name, res.Changes, err)
		}
	}
	_, err = entry("another cluster's secret").Changes(ctx, c, service.ChangesRequest{Since: first.NextCursor})
	if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "expired or foreign cursor") {
		t.Errorf("a node of another cluster: %v, want invalid", err)
	}
}
