//go:build cluster

// The cluster under test: three etcd members in this process, three Munin
// nodes as processes, a file replica, and the keys of the projects.

package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Sizes of the cluster: the three etcd members and three nodes.
const (
	etcdMembers = 3
	nodeCount   = 3
	// keyWorkers bounds the `munin key create` processes run at once.
	keyWorkers = 4
	// projectName is the one project of each workspace.
	projectName = "p"
)

// projectOf is the project of workspace ws.
func projectOf(ws string) string { return ws + "/" + projectName }

// cluster is everything the test started.
type cluster struct {
	t          *testing.T
	bin        string
	litestream string
	logDir     string
	etcd       Coordinator
	cli        *clientv3.Client
	secret     string
	replicaDir string
	nodes      []*node
	projects   []string          // bereich-N/p
	probeKeys  map[string]string // project → a write key of the test's own (probes and reading back)
	l          *ledger

	mu      sync.Mutex
	others  []*agent // probes and the throughput phase's agents, for their unexpected errors
	writers []*agent // the rounds' agents, whose sessions a kill ends (sessions.go)
}

// keep remembers agents outside the rounds' own, so that their unexpected
// errors count too.
func (c *cluster) keep(as ...*agent) {
	c.mu.Lock()
	c.others = append(c.others, as...)
	c.mu.Unlock()
}

// unexpected returns how many calls of all agents c kept, plus extra,
// ended in an unexpected error, and the first such error of each agent.
func (c *cluster) unexpected(extra []*agent) (int, []string) {
	c.mu.Lock()
	all := append(slices.Clone(c.others), extra...)
	c.mu.Unlock()
	n, first := 0, []string(nil)
	for _, a := range all {
		o, bad := a.snapshot()
		n += o[outOther]
		if bad != "" {
			first = append(first, bad)
		}
	}
	return n, first
}

// startCluster starts etcd and the nodes and makes a probe key per project.
func startCluster(t *testing.T, bin, litestream, logDir string, workspaces int) *cluster {
	c := &cluster{t: t, bin: bin, litestream: litestream, logDir: logDir, l: &ledger{},
		replicaDir: filepath.Join(t.TempDir(), "replica"), probeKeys: map[string]string{}}
	c.etcd = startCoordinator(t, etcdMembers)
	c.cli = c.etcd.Client(t)
	b := make([]byte, 16)
	rand.Read(b)
	c.secret = hex.EncodeToString(b)
	for i := range nodeCount {
		c.nodes = append(c.nodes, clusterNode(t, i, bin, litestream, c.secret, c.etcd.Endpoints(), c.replicaDir, logDir))
	}
	// A failed run shows the end of each node's latest log (all of them
	// stay with -cluster.protokolle).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range c.nodes {
			if n.p != nil {
				t.Logf("Protokoll %s (Start %d), Ende:\n%s", n.name, n.starts, n.p.logTail(1500))
			}
		}
	})
	// The first node creates the cluster's meta record; the others join it.
	if _, err := c.nodes[0].start(t); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, nodeCount)
	for i := 1; i < nodeCount; i++ {
		wg.Go(func() { _, errs[i] = c.nodes[i].start(t) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range workspaces {
		c.projects = append(c.projects, projectOf(fmt.Sprintf("bereich-%d", i)))
	}
	tokens := c.keys(t, len(c.projects), "write", func(i int) (string, string) { return c.projects[i], fmt.Sprintf("pruefer-%d", i) })
	for i, p := range c.projects {
		c.probeKeys[p] = tokens[i]
	}
	return c
}

// keys makes n keys of role through etcd, spec(i) naming key i's project
// and agent, keyWorkers at a time.
func (c *cluster) keys(t *testing.T, n int, role string, spec func(int) (project, agent string)) []string {
	return makeKeys(t, n, keyWorkers, func(ctx context.Context, i int) (string, error) {
		project, agent := spec(i)
		ws, p := splitProject(project)
		return createKey(ctx, c.bin, []string{"MUNIN_CLUSTER_SECRET=" + c.secret},
			[]string{"--etcd", strings.Join(c.etcd.Endpoints(), ",")}, ws, p, agent, role)
	})
}

// makeKeys runs mk for 0..n-1 with workers at a time and fails the test
// on the first error.
func makeKeys(t *testing.T, n, workers int, mk func(context.Context, int) (string, error)) []string {
	out := make([]string, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = mk(context.Background(), i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// advertised lists the nodes' advertise URLs, by node index.
func (c *cluster) advertised() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.advertise()
	}
	return out
}

// agents makes n agents named prefix-NN with keys of their own: agent i
// works in project i mod P and talks to node (i + i/P) mod N, so that each
// project is reached through every node.
func (c *cluster) agents(t *testing.T, n int, prefix string) []*agent {
	p := len(c.projects)
	tokens := c.keys(t, n, "write", func(i int) (string, string) { return c.projects[i%p], fmt.Sprintf("%s-%02d", prefix, i) })
	out := make([]*agent, n)
	for i := range n {
		node := (i + i/p) % len(c.nodes)
		name := fmt.Sprintf("%s-%02d", prefix, i)
		out[i] = newAgent(name, node, c.nodes[node].mcpURL(), tokens[i], c.projects[i%p], ownSlugs(name, *clusterSlugs))
	}
	return out
}

// ownSlugs are the n slugs only agent name writes.
func ownSlugs(name string, n int) []string {
	out := make([]string, max(n, 1))
	for i := range out {
		out[i] = fmt.Sprintf("%s/s%d", name, i)
	}
	return out
}

// stopNodes ends every running node with SIGTERM; an unclean end is an
// error of the test.
func (c *cluster) stopNodes(t *testing.T) {
	for _, n := range c.nodes {
		if n.p == nil || n.p.exited() {
			continue
		}
		if err := n.p.stop(); err != nil {
			t.Errorf("%s: %v\n%s", n.name, err, n.p.logTail(2000))
		}
	}
}

// splitProject splits "workspace/project".
func splitProject(ref string) (string, string) {
	ws, p, _ := strings.Cut(ref, "/")
	return ws, p
}
