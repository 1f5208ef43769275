//go:build cluster

package clustertest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A cluster node is started with exactly the flags of the contract with
// `munin serve --cluster`, the secret only in the environment.
func TestClusterNodeArgs(t *testing.T) {
	n := clusterNode(t, 2, "/bin/munin", "/bin/litestream", "geheim", []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, "/r", t.TempDir())
	got := strings.Join(n.args("/d"), " ")
	want := "serve --cluster --data /d --addr " + n.addr + " --advertise http://" + n.addr +
		" --etcd http://127.0.0.1:1,http://127.0.0.1:2 --replica file:///r --lease-ttl " + clusterTTL.String() +
		" --replication " + *clusterModus + " --litestream /bin/litestream " + strings.Join(serveLimitsOff, " ")
	if got != want {
		t.Fatalf("args\n got %s\nwant %s", got, want)
	}
	if !slices.Equal(n.env, []string{"MUNIN_CLUSTER_SECRET=geheim"}) || strings.Contains(got, "geheim") {
		t.Fatalf("the secret belongs in the environment only: env %v, args %s", n.env, got)
	}
	if n.name != "n2" || !strings.HasPrefix(n.addr, "127.0.0.1:") || n.mcpURL() != "http://"+n.addr+"/mcp" {
		t.Fatalf("node %s at %s, %s", n.name, n.addr, n.mcpURL())
	}
}

// The single node of the comparison: keys made with the built binary's
// `key create --data`, the node serving them (healthz, one remember over
// MCP), restarted at the same address, and ended cleanly with SIGTERM.
func TestSingleNodeWithKeys(t *testing.T) {
	bin := buildMunin(t)
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	tokens := makeKeys(t, 2, 1, func(ctx context.Context, i int) (string, error) {
		return createKey(ctx, bin, nil, []string{"--data", dir}, "bereich-0", "p", []string{"a", "b"}[i], "write")
	})
	if tokens[0] == tokens[1] || !strings.HasPrefix(tokens[0], "munin_") {
		t.Fatalf("tokens %q", tokens)
	}
	if _, err := createKey(ctx, bin, nil, []string{"--data", dir}, "Bereich!", "p", "c", "write"); err == nil {
		t.Fatal("key create with a bad workspace name: no error")
	}
	n := singleNode(t, bin, dir, t.TempDir())
	l := &ledger{}
	for start := range 2 {
		if _, err := n.start(t); err != nil {
			t.Fatalf("start %d: %v", start+1, err)
		}
		a := newAgent("a", 0, n.mcpURL(), tokens[0], "bereich-0/p", []string{"a/s0"})
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		x, ok := a.untilAck(actx, l)
		cancel()
		a.close()
		if !ok || x.version != start+1 {
			o, _ := a.snapshot()
			t.Fatalf("start %d: remember %+v, %v", start+1, x, o)
		}
		if code := readyz(n.advertise()); code != 200 {
			t.Fatalf("start %d: /readyz %d", start+1, code)
		}
		if err := n.p.stop(); err != nil {
			t.Fatalf("stop %d: %v\n%s", start+1, err, n.p.logTail(1000))
		}
		if code := readyz(n.advertise()); code != 0 {
			t.Fatalf("after stop %d: /readyz %d, want no answer", start+1, code)
		}
	}
	if n.starts != 2 || n.dataDir != dir {
		t.Fatalf("starts %d, data %s", n.starts, n.dataDir)
	}
}
