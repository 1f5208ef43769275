//go:build cluster

// The throughput comparison: the same remember-only load of N agents on the
// cluster (agents spread over the nodes) and on one `munin serve` without
// --cluster, for the same time. The goal is cluster sync mode at
// least 0.3 × the single node; the test reports the ratio and does not
// assert it (a wall-clock figure on a shared machine).

package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// throughput runs agents for d after they all have a session, their acks
// going into the cluster's ledger (they are verified with the rest), and
// returns the acknowledged remembers per second.
func (c *cluster) throughput(t *testing.T, agents []*agent, d time.Duration) float64 {
	c.keep(agents...)
	return drive(t, agents, c.l, d)
}

// singleThroughput runs the same load on one plain node over a fresh data
// directory and returns its acknowledged remembers per second.
func (c *cluster) singleThroughput(t *testing.T, n int, d time.Duration) float64 {
	dir := filepath.Join(t.TempDir(), "einzeln")
	// One process at a time: the keys go into the node's SQLite control file.
	p := len(c.projects)
	tokens := makeKeys(t, n, 1, func(ctx context.Context, i int) (string, error) {
		ws, proj := splitProject(c.projects[i%p])
		return createKey(ctx, c.bin, nil, []string{"--data", dir}, ws, proj, fmt.Sprintf("last-%02d", i), "write")
	})
	single := singleNode(t, c.bin, dir, c.logDir)
	if _, err := single.start(t); err != nil {
		t.Fatal(err)
	}
	agents := make([]*agent, n)
	for i := range n {
		name := fmt.Sprintf("last-%02d", i)
		agents[i] = newAgent(name, 0, single.mcpURL(), tokens[i], c.projects[i%p], ownSlugs(name, *clusterSlugs))
	}
	r := drive(t, agents, &ledger{}, d)
	if err := single.p.stop(); err != nil {
		t.Errorf("einzelner Knoten: %v\n%s", err, single.p.logTail(2000))
	}
	return r
}

// warmWait bounds each agent's first write, before the measurement.
const warmWait = 30 * time.Second

// drive lets every agent write once (a session, its workspace opened and
// owned), then lets them write for d and returns the acks per second that
// came in during d.
func drive(t *testing.T, agents []*agent, l *ledger, d time.Duration) float64 {
	var wg sync.WaitGroup
	ok := make([]bool, len(agents))
	for i, a := range agents {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), warmWait)
			defer cancel()
			_, ok[i] = a.untilAck(ctx, l)
		})
	}
	wg.Wait()
	for i := range agents {
		if !ok[i] {
			o, first := agents[i].snapshot()
			t.Fatalf("%s: kein bestätigter Schreibvorgang in %s vor der Messung: %s %s", agents[i].name, warmWait, outcomeLine(o), first)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for _, a := range agents {
		wg.Go(func() { a.run(ctx, l) })
	}
	if !waitGroupBounded(&wg, d+callTimeout()+10*time.Second) {
		t.Fatal("Agenten der Durchsatzmessung enden nicht")
	}
	return rate(l.all(), start, start.Add(d))
}
