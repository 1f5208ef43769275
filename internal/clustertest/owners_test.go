//go:build cluster

package clustertest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The embedded etcd comes up with three members on 127.0.0.1; owners are
// read as the nodes write them: the lowest create revision under a
// workspace's election prefix is its owner, its value the advertise URL.
func TestOwnersFromEtcd(t *testing.T) {
	e := startCoordinator(t, 3)
	if eps := e.Endpoints(); len(eps) != 3 {
		t.Fatalf("endpoints %v", eps)
	}
	cli := e.Client(t)
	ctx := context.Background()
	put := func(key, val string) int64 {
		t.Helper()
		r, err := cli.Put(ctx, key, val)
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	a, b, c := "http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"
	put(etcdPrefix+"/nodes/x", a)
	put(etcdPrefix+"/nodes/y", b)
	ws0 := put(etcdPrefix+"/owner/bereich-0/694d", a)
	put(etcdPrefix+"/owner/bereich-0/694e", b) // a waiting campaigner
	ws1 := put(etcdPrefix+"/owner/bereich-1/694e", b)
	ws2 := put(etcdPrefix+"/owner/bereich-2/694d", a)
	put(etcdPrefix+"/owner/bereich-3/694f", c)
	put(etcdPrefix+"/ownerless", "x") // not under owner/

	owners, err := readOwners(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]owner{"bereich-0": {a, ws0}, "bereich-1": {b, ws1}, "bereich-2": {a, ws2}, "bereich-3": {c, owners["bereich-3"].epoch}}
	if len(owners) != len(want) {
		t.Fatalf("owners %v, want %v", owners, want)
	}
	for ws, o := range want {
		if owners[ws] != o {
			t.Errorf("%s: owner %v, want %v", ws, owners[ws], o)
		}
	}

	// Busiest among the written workspaces: a owns two of them.
	adv := []string{a, b, c}
	node, owned, ok := busiest(owners, adv, map[string]bool{"bereich-0": true, "bereich-1": true, "bereich-2": true})
	if !ok || node != 0 || len(owned) != 2 || owned["bereich-0"] != ws0 || owned["bereich-2"] != ws2 {
		t.Fatalf("busiest: node %d owns %v (%v)", node, owned, ok)
	}
	// Only bereich-3 written: c, though it owns one.
	if node, _, ok := busiest(owners, adv, map[string]bool{"bereich-3": true}); !ok || node != 2 {
		t.Fatalf("busiest of bereich-3: %d %v", node, ok)
	}
	if _, _, ok := busiest(owners, adv, map[string]bool{"bereich-9": true}); ok {
		t.Fatal("busiest found an owner of an unowned workspace")
	}

	// The owner of bereich-0 goes (its lease ran out): the waiting
	// campaigner is the new owner at another epoch; bereich-2 keeps its
	// owner and has no result when the deadline passes.
	start := time.Now()
	go func() {
		time.Sleep(100 * time.Millisecond)
		cli.Delete(ctx, etcdPrefix+"/owner/bereich-0/694d")
	}()
	got := waitNewOwners(ctx, cli, map[string]int64{"bereich-0": ws0, "bereich-2": ws2}, start, start.Add(time.Second))
	if _, ok := got["bereich-0"]; !ok || len(got) != 1 {
		t.Fatalf("new owners %v, want bereich-0 only", got)
	}
	if got["bereich-0"] < 100*time.Millisecond {
		t.Fatalf("new owner seen after %s, before the old one went", got["bereich-0"])
	}

	// A node's registration: waitNodeGone waits for its removal.
	go func() {
		time.Sleep(50 * time.Millisecond)
		cli.Delete(ctx, etcdPrefix+"/nodes/", clientv3.WithPrefix())
	}()
	if err := waitNodeGone(ctx, cli, a, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	put(etcdPrefix+"/nodes/y", b)
	if err := waitNodeGone(ctx, cli, b, time.Now().Add(100*time.Millisecond)); err == nil {
		t.Fatal("waitNodeGone: no error for a node that stays")
	}
}
