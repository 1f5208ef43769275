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
	"strings"
	"sync"
	"testing"
	"time"
)

// throughput runs agents for d after they all have a session, their acks
// going into the cluster's ledger (they are verified with the rest), and
// returns the acknowledged remembers per second.
func (c *cluster) throughput(t *testing.T, agents []*agent, d time.Duration) (float64, phaseCost) {
	c.keep(agents...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token, err := keyCreate(ctx, c.bin, []string{"MUNIN_CLUSTER_SECRET=" + c.secret},
		[]string{"--etcd", strings.Join(c.etcd.Endpoints(), ","), "--server-admin", "--agent", "messung"})
	if err != nil {
		t.Fatal(err)
	}
	return drive(t, agents, c.l, d, &meter{nodes: c.nodes, token: token})
}

// singleThroughput runs the same load on one plain node over a fresh data
// directory and returns its acknowledged remembers per second.
func (c *cluster) singleThroughput(t *testing.T, n int, d time.Duration) (float64, phaseCost) {
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
	r, cost := drive(t, agents, &ledger{}, d, &meter{})
	if err := single.p.stop(); err != nil {
		t.Errorf("einzelner Knoten: %v\n%s", err, single.p.logTail(2000))
	}
	return r, cost
}

// warmWait bounds each agent's first write, before the measurement.
const warmWait = 30 * time.Second

// drive lets every agent write once (a session, its workspace opened and
// owned), then lets them write for d and returns the acks per second that
// came in during d, and what they cost (m samples around d).
func drive(t *testing.T, agents []*agent, l *ledger, d time.Duration, m *meter) (float64, phaseCost) {
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
	m.start(t)
	start := time.Now()
	for _, a := range agents {
		wg.Go(func() { a.run(ctx, l) })
	}
	<-ctx.Done()
	m.stop(t)
	if !waitGroupBounded(&wg, callTimeout()+10*time.Second) {
		t.Fatal("Agenten der Durchsatzmessung enden nicht")
	}
	r := rate(l.all(), start, start.Add(d))
	return r, m.cost(int(r*d.Seconds() + 0.5))
}

// meter samples a phase's cost at the start and the end of its measurement;
// with nodes (the cluster) also their replica confirmations.
type meter struct {
	nodes      []*node
	token      string
	cpu0, cpu1 map[string]time.Duration
	w0, c0     float64 // replica-acknowledged writes and confirmations at start
	w1, c1     float64 // … and at stop
}

func (m *meter) start(t *testing.T) { m.cpu0, m.w0, m.c0 = m.sample(t) }

func (m *meter) stop(t *testing.T) { m.cpu1, m.w1, m.c1 = m.sample(t) }

func (m *meter) sample(t *testing.T) (map[string]time.Duration, float64, float64) {
	cpu := cpuByPart()
	if len(m.nodes) == 0 {
		return cpu, 0, 0
	}
	w, c, err := ackCounts(m.nodes, m.token)
	if err != nil {
		t.Fatal(err)
	}
	return cpu, w, c
}

// cost is the phase's cost for acks acknowledged remembers.
func (m *meter) cost(acks int) phaseCost {
	c := phaseCost{acks: acks}
	if m.cpu0 != nil && m.cpu1 != nil {
		c.measured, c.cpu = true, map[string]time.Duration{}
		for part, d := range m.cpu1 {
			c.cpu[part] = d - m.cpu0[part]
		}
	}
	if m.c1 > m.c0 {
		c.perAck = (m.w1 - m.w0) / (m.c1 - m.c0)
	}
	return c
}
