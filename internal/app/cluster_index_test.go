package app

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"munin/internal/cluster/etcdtest"
	"munin/internal/memory"
)

// A node that owned a workspace, left, and takes it over again later has a search
// index on disk from its first ownership. After the takeover it must answer from
// the restored file: what other owners wrote meanwhile is found, and a version
// they replaced does not come back (invariant 3
// (docs/architecture.md#invariant-3-read-your-writes): the index is trusted only
// up to the change it records, caught up beyond it).
func TestClusterIndexOfAReturningOwner(t *testing.T) {
	bin := requireLitestream(t)
	etcd := etcdtest.Start(t, 1)
	replicaDir := t.TempDir()
	dirA := t.TempDir()
	recall := func(n *clusterApp, token, q string) string {
		t.Helper()
		code, body := rest(t, http.MethodGet, n.url+"/api/v1/recall?q="+q, token, "")
		if code != http.StatusOK {
			t.Fatalf("recall %s through %s: %d %s", q, n.url, code, body)
		}
		return body
	}
	remember := func(n *clusterApp, token, slug, content string) {
		t.Helper()
		code, body := rest(t, http.MethodPost, n.url+"/api/v1/entries", token, `{"slug":"`+slug+`","title":"t","content":"`+content+`"}`)
		if code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("remember %s through %s: %d %s", slug, n.url, code, body)
		}
	}

	// The first owner writes and builds its index.
	a := startNodeAt(t, dirA, etcd.Endpoints(), replicaDir, bin)
	token, _, err := a.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: "team", Project: "p"}, "agent", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	remember(a, token, "notes/s0", "first version zebra")
	remember(a, token, "notes/s1", "kept aardvark")
	if body := recall(a, token, "zebra"); !strings.Contains(body, "notes/s0") {
		t.Fatalf("recall on the first owner: %s", body)
	}

	// It leaves; another node takes over and writes: s0 replaced, s2 new.
	b := startNode(t, etcd.Endpoints(), replicaDir, bin)
	a.stop()
	remember(b, token, "notes/s0", "second version walrus")
	remember(b, token, "notes/s2", "new quokka")
	if body := recall(b, token, "quokka"); !strings.Contains(body, "notes/s2") {
		t.Fatalf("recall on the second owner: %s", body)
	}

	// The first node comes back with its disk, and takes over when the
	// second leaves.
	a2 := startNodeAt(t, dirA, etcd.Endpoints(), replicaDir, bin)
	b.stop()
	for _, c := range []struct {
		q, slug string
		found   bool
	}{
		{"quokka", "notes/s2", true},   // written by the other owner
		{"walrus", "notes/s0", true},   // the version that replaced the one indexed here
		{"zebra", "notes/s0", false},   // the replaced version must not come back
		{"aardvark", "notes/s1", true}, // unchanged since
	} {
		body := recall(a2, token, c.q)
		if strings.Contains(body, c.slug) != c.found {
			t.Errorf("recall %s through the returning owner: %s; want %s found: %v", c.q, body, c.slug, c.found)
		}
	}
	if owner, _, ok := a2.a.cluster.node.Owner("team"); !ok || owner != a2.url {
		t.Fatalf("owner of team: %s (ok %v), want the returning node %s", owner, ok, a2.url)
	}
}
