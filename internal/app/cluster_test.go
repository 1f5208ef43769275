package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"munin/internal/cluster"
	"munin/internal/cluster/etcdtest"
	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/replica"
)

const testSecret = "app-cluster-test-secret"

// requireLitestream returns the litestream binary, or skips (fails with
// MUNIN_REQUIRE_LITESTREAM=1, as CI sets it).
func requireLitestream(t *testing.T) string {
	t.Helper()
	bin, err := replica.Binary()
	if err != nil {
		if os.Getenv("MUNIN_REQUIRE_LITESTREAM") == "1" {
			t.Fatal(err)
		}
		t.Skipf("cluster test needs litestream: %v", err)
	}
	return bin
}

// clusterApp is one node of a test cluster, serving on 127.0.0.1.
type clusterApp struct {
	a    *App
	url  string
	stop func()
	// served is closed when Serve returned, with serveErr.
	served   chan struct{}
	serveErr error
}

func startNode(t *testing.T, etcd []string, replicaDir, litestream string) *clusterApp {
	t.Helper()
	return startNodeAt(t, t.TempDir(), etcd, replicaDir, litestream)
}

// startNodeAt starts a node on dataDir (a node coming back with its disk).
func startNodeAt(t *testing.T, dataDir string, etcd []string, replicaDir, litestream string) *clusterApp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	cfg := Config{Config: config.Config{Server: config.Server{Addr: ln.Addr().String()}, Storage: config.Storage{DataDir: dataDir}, Cluster: ClusterConfig{Enabled: true, Etcd: etcd, Advertise: url, Replica: "file://" + replicaDir,
		LeaseTTL: 2 * time.Second, Litestream: litestream, Secret: testSecret}}, Exclusive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), IndexPersistNap: testPersistNap}
	a, err := Open(cfg)
	if err != nil {
		ln.Close()
		t.Fatalf("open node %s: %v", url, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &clusterApp{a: a, url: url, served: make(chan struct{})}
	go func() {
		n.serveErr = a.Serve(ctx, ln)
		close(n.served)
	}()
	var once bool
	n.stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		<-n.served
		if err := a.Close(); err != nil {
			t.Errorf("close node %s: %v", url, err)
		}
	}
	t.Cleanup(n.stop)
	return n
}

// rest calls the REST API of a node with a key and returns status and body.
func rest(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	code, b, err := tryRest(method, url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// tryRest is rest for a node that may have stopped (err: no answer).
func tryRest(method, url, token, body string) (int, string, error) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// Two nodes on one etcd and a file replica: a key made on one node works
// on the other, a write through either node lands at the workspace's owner
// and is read back through the other, and when the owner leaves, the
// other node takes the workspace over from the replica with every write.
func TestClusterTwoNodes(t *testing.T) {
	n1, n2, token := twoNodes(t)
	for i, n := range []*clusterApp{n1, n2, n1, n2} {
		code, body := rest(t, http.MethodPost, n.url+"/api/v1/entries", token,
			fmt.Sprintf(`{"slug":"notes/s%d","title":"t","content":"written through node %d zebra%d"}`, i, i%2+1, i))
		if code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("remember %d through %s: %d %s", i, n.url, code, body)
		}
	}
	for i, n := range []*clusterApp{n2, n1} {
		code, body := rest(t, http.MethodGet, n.url+"/api/v1/recall?q=zebra2", token, "")
		if code != http.StatusOK || !strings.Contains(body, "notes/s2") {
			t.Fatalf("recall %d through %s: %d %s", i, n.url, code, body)
		}
	}

	// The owner leaves (graceful: it syncs and resigns); the other node
	// restores the workspace from the replica.
	leaving, staying, epoch := ownerOfTeam(t, n1, n2)
	leaving.stop()
	for i := range 4 {
		code, body := rest(t, http.MethodGet, staying.url+fmt.Sprintf("/api/v1/entries/notes/s%d", i), token, "")
		if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("zebra%d", i)) {
			t.Fatalf("after the owner left, get s%d through %s: %d %s", i, staying.url, code, body)
		}
	}
	newOwner, newEpoch, ok := staying.a.cluster.node.Owner("team")
	if !ok || newOwner != staying.url || newEpoch <= epoch {
		t.Fatalf("owner after handover: %s at %d (ok %v); want %s after epoch %d", newOwner, newEpoch, ok, staying.url, epoch)
	}
	// The new owner's search index comes from the restored file: a word
	// written before the hand-over is found, and so is the word of a write
	// after it.
	if code, body := rest(t, http.MethodGet, staying.url+"/api/v1/recall?q=zebra3", token, ""); code != http.StatusOK || !strings.Contains(body, "notes/s3") {
		t.Fatalf("recall of a word written before the hand-over through %s: %d %s", staying.url, code, body)
	}
	code, body := rest(t, http.MethodPost, staying.url+"/api/v1/entries", token, `{"slug":"notes/s0","title":"t","content":"second version"}`)
	if code != http.StatusOK && code != http.StatusCreated || !strings.Contains(body, `"version":2`) {
		t.Fatalf("write after takeover: %d %s", code, body)
	}
	code, body = rest(t, http.MethodPost, staying.url+"/api/v1/entries", token, `{"slug":"notes/after","title":"t","content":"written after the hand-over quokka"}`)
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("write of a new entry after takeover: %d %s", code, body)
	}
	if code, body := rest(t, http.MethodGet, staying.url+"/api/v1/recall?q=quokka", token, ""); code != http.StatusOK || !strings.Contains(body, "notes/after") {
		t.Fatalf("recall of a word written after the hand-over through %s: %d %s", staying.url, code, body)
	}
}

// twoNodes starts one etcd member and two nodes on a file replica, and makes
// a write key for team/p.
func twoNodes(t *testing.T) (n1, n2 *clusterApp, token string) {
	t.Helper()
	bin := requireLitestream(t)
	etcd := etcdtest.Start(t, 1)
	replicaDir := t.TempDir()
	n1 = startNode(t, etcd.Endpoints(), replicaDir, bin)
	n2 = startNode(t, etcd.Endpoints(), replicaDir, bin)
	token, _, err := n1.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: "team", Project: "p"}, "agent", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	return n1, n2, token
}

// ownerOfTeam tells which of two nodes owns workspace team, at which epoch.
func ownerOfTeam(t *testing.T, n1, n2 *clusterApp) (owner, other *clusterApp, epoch int64) {
	t.Helper()
	url, epoch, ok := n1.a.cluster.node.Owner("team")
	if !ok {
		t.Fatal("no owner of team after writes")
	}
	if url == n2.url {
		return n2, n1, epoch
	}
	return n1, n2, epoch
}

// A node refuses to start without what cluster mode needs, naming it.
func TestClusterConfigRefused(t *testing.T) {
	for _, c := range []struct {
		cc   ClusterConfig
		want string
	}{
		{ClusterConfig{Enabled: true, Advertise: "http://x", Replica: "file:///r", Secret: testSecret}, "--etcd"},
		{ClusterConfig{Enabled: true, Etcd: []string{"e"}, Replica: "file:///r", Secret: testSecret}, "--advertise"},
		{ClusterConfig{Enabled: true, Etcd: []string{"e"}, Advertise: "http://x", Secret: testSecret}, "--replica"},
		{ClusterConfig{Enabled: true, Etcd: []string{"e"}, Advertise: "http://x", Replica: "file:///r"}, "MUNIN_CLUSTER_SECRET"},
	} {
		_, err := Open(Config{Config: config.Config{Storage: config.Storage{DataDir: t.TempDir()}, Cluster: c.cc}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cc, err, c.want)
		}
	}
	_, err := Open(Config{Config: config.Config{Storage: config.Storage{DataDir: t.TempDir()}, Cluster: ClusterConfig{Enabled: true, Etcd: []string{"http://127.0.0.1:1"},
		Advertise: "http://127.0.0.1:2", Replica: "file://" + t.TempDir(), Secret: testSecret, LeaseTTL: 2 * time.Second,
		Litestream: requireLitestream(t)}}})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable etcd: %v, want an error naming the endpoint", err)
	}
}

// Faults: with the replica unwritable a write answers unavailable (sync
// mode acknowledges nothing the replica lacks) and works again once the
// replica is back; with etcd gone the node stops acknowledging writes
// within its lease TTL, and answers unavailable, never a 5xx of its own.
func TestClusterFaults(t *testing.T) {
	bin := requireLitestream(t)
	etcd := etcdtest.Start(t, 1)
	replicaDir := t.TempDir()
	n := startNode(t, etcd.Endpoints(), replicaDir, bin)
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	token, _, err := n.a.Svc.CreateKey(context.Background(), ref, "agent", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int) (int, string) {
		return rest(t, http.MethodPost, n.url+"/api/v1/entries", token, fmt.Sprintf(`{"slug":"f/s%d","title":"t","content":"c%d"}`, i, i))
	}
	if code, body := write(0); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("first write: %d %s", code, body)
	}
	admin, _, err := n.a.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := rest(t, http.MethodGet, n.url+"/metrics", admin, ""); code != http.StatusOK ||
		!strings.Contains(body, "munin_replication_lag_seconds 0") || !strings.Contains(body, "munin_cluster_lease_valid 1") {
		t.Fatalf("metrics of a cluster node: %d, want the replication lag (0) and a valid lease", code)
	}

	// The replica becomes unwritable: a file where its directory was.
	moved := replicaDir + ".moved"
	if err := os.Rename(replicaDir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replicaDir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := write(1); code != http.StatusServiceUnavailable || !strings.Contains(body, "replica") {
		t.Fatalf("write with the replica unwritable: %d %s, want 503 naming the replica", code, body)
	}
	if err := os.Remove(replicaDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, replicaDir); err != nil {
		t.Fatal(err)
	}
	if code, body := write(2); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("write once the replica is back: %d %s", code, body)
	}

	// etcd goes away: within the lease TTL (2 s) plus a margin the node
	// refuses writes — it answers unavailable, or no longer at all, once it
	// stopped; polled, bounded in count.
	etcd.Stop(0)
	refused := false
	for i := range 60 {
		code, body, err := tryRest(http.MethodPost, n.url+"/api/v1/entries", token, fmt.Sprintf(`{"slug":"f/s%d","title":"t","content":"c"}`, 10+i))
		if err == nil && code >= 500 && code != http.StatusServiceUnavailable {
			t.Fatalf("write with etcd gone: %d %s", code, body)
		}
		if err != nil || code == http.StatusServiceUnavailable {
			refused = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !refused {
		t.Fatal("the node kept acknowledging writes 6 s after etcd went away (lease TTL 2 s)")
	}
	// Nor does it serve reads of the file it holds: it cannot know whether
	// it still owns the workspace (docs/cluster.md#what-a-failure-costs).
	for _, path := range []string{"/readyz", "/api/v1/entries/f/s0"} {
		if code, body, err := tryRest(http.MethodGet, n.url+path, token, ""); err == nil && code != http.StatusServiceUnavailable {
			t.Fatalf("GET %s with etcd gone: %d %s, want 503 or no answer", path, code, body)
		}
	}
	// It stops, so that a supervisor starts it again as a new node.
	select {
	case <-n.served:
	case <-time.After(30 * time.Second):
		t.Fatal("the node still serves 30 s after etcd went away (lease TTL 2 s)")
	}
	if !errors.Is(n.serveErr, cluster.ErrLeaseLost) {
		t.Fatalf("Serve of a node that lost its lease returned %v, want cluster.ErrLeaseLost", n.serveErr)
	}
}
