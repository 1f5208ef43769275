//go:build cluster

// Outages: kill -9 of the busiest owner's process group and its restart
// with an empty data directory at the same address, and the SIGSTOP of an
// owner for 2 × TTL. For each, per workspace the owner had, the time until
// etcd shows a new owner and until a write through another node is
// acknowledged.

package clustertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// hardLimit bounds every wait for a failover. The acceptance bounds (TTL +
// 1 s, TTL + 3 s) are far below it; waiting longer only lets the report
// say how long it really took.
func hardLimit() time.Duration { return 3**clusterTTL + 30*time.Second }

// probeTimeout bounds one probe write: a probe retries often, like a client
// with a timeout, so that one call stuck at a vanished owner does not decide
// when writes count as accepted again.
const probeTimeout = time.Second

// pickBusiest reads the owners and picks the node owning most of the
// written workspaces.
func (c *cluster) pickBusiest(t *testing.T) (int, map[string]int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	owners, err := readOwners(ctx, c.cli)
	if err != nil {
		t.Fatal(err)
	}
	node, owned, ok := busiest(owners, c.advertised(), c.l.written())
	if !ok {
		t.Fatalf("kein Knoten besitzt einen der beschriebenen Arbeitsbereiche %v; Eigentümer in etcd: %v", c.l.written(), owners)
	}
	return node, owned
}

// killRound kills the busiest owner's process group, measures the
// failover of its workspaces and restarts it empty at the same address.
func (c *cluster) killRound(t *testing.T, round int) failover {
	node, owned := c.pickBusiest(t)
	n := c.nodes[node]
	sessions := c.expectLostSessions(node)
	start := time.Now()
	if err := n.p.kill(); err != nil {
		t.Fatalf("Runde %d: kill -9 von %s: %v", round, n.name, err)
	}
	f := c.measure(node, owned, start, fmt.Sprintf("runde-%02d", round))
	f.label = fmt.Sprintf("Runde %d", round)
	f.sessions = sessions
	// Its registration goes with its lease; until then a node at the same
	// URL is refused at join.
	ctx := context.Background()
	if err := waitNodeGone(ctx, c.cli, n.advertise(), start.Add(hardLimit())); err != nil {
		t.Fatalf("Runde %d: %v", round, err)
	}
	d, err := n.start(t)
	if err != nil {
		t.Fatalf("Runde %d: Neustart: %v", round, err)
	}
	f.restart = d
	f.acks = c.l.count()
	return f
}

// paused is what the SIGSTOP phase found.
type paused struct {
	failover
	idx int       // the paused node's index
	at  time.Time // the moment of SIGSTOP, taken just before sending it
	// stopped is when the SIGSTOP had been sent: a request sent before may
	// still have been served before the signal landed.
	stopped time.Time
	cont    time.Time // the moment of SIGCONT
	// back is the time from SIGCONT until the node acknowledged a write
	// again; ok is false if it did not within recoveryLimit (it may answer
	// unavailable for good: the issue asks only that it acknowledges
	// nothing it should not).
	back time.Duration
	ok   bool
	// ready is the node's /readyz status at the end of the phase (0: no
	// answer): a node that lost its lease says so there until it stopped.
	ready int
	// exit is the status the node ended with by itself after losing its
	// lease (exited false: it still ran exitLimit after the phase).
	exit   int
	exited bool
}

// exitLimit bounds the wait for a node without its lease to end: it
// drains its requests (up to 15 s, app.drainTimeout) and closes its files.
const exitLimit = 30 * time.Second

// recoveryLimit bounds the wait for a paused node to acknowledge again.
func recoveryLimit() time.Duration { return 2**clusterTTL + 5*time.Second }

// stopPhase pauses the munin process of the busiest owner (not its
// litestream) for 2 × TTL while the agents go on writing, continues it,
// and then lets the agents write at least TTL + 1 s more, so that its
// answers after waking are seen, while a probe through it waits for its
// first acknowledged write. From the pause on, the ledger counts the
// outcomes of the calls sent to it.
func (c *cluster) stopPhase(t *testing.T) paused {
	node, owned := c.pickBusiest(t)
	n := c.nodes[node]
	p := paused{idx: node, at: time.Now()}
	c.l.watch(node, p.at)
	if err := n.p.pause(); err != nil {
		t.Fatalf("SIGSTOP %s: %v", n.name, err)
	}
	p.stopped = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { p.failover = c.measure(node, owned, p.at, "angehalten") })
	sleep(context.Background(), time.Until(p.at.Add(2**clusterTTL)))
	if err := n.p.resume(); err != nil {
		t.Fatalf("SIGCONT %s: %v", n.name, err)
	}
	resumed := time.Now()
	p.cont = resumed
	wg.Wait()
	var ws string
	for w := range owned {
		ws = w
	}
	ctx, cancel := context.WithTimeout(context.Background(), recoveryLimit())
	defer cancel()
	probe := newAgent("sonde-"+n.name, node, n.mcpURL(), c.probeKeys[projectOf(ws)], projectOf(ws), []string{"sonde/wieder-" + n.name})
	probe.timeout = probeTimeout
	c.keep(probe)
	defer probe.close()
	if x, ok := probe.untilAck(ctx, c.l); ok {
		p.back, p.ok = x.done.Sub(resumed), true
	}
	sleep(context.Background(), time.Until(resumed.Add(*clusterTTL+time.Second)))
	p.ready = readyz(n.advertise())
	p.exit, p.exited = n.p.exitWithin(exitLimit)
	p.label, p.acks = "SIGSTOP 2×TTL", c.l.count()
	return p
}

// measure waits, from start on, until each workspace in owned has an owner
// at a new epoch and until a probe write to it through another node than
// gone is acknowledged (the probes' writes are acks like any other).
func (c *cluster) measure(gone int, owned map[string]int64, start time.Time, probeSlug string) failover {
	f := failover{node: c.nodes[gone].name, newOwner: map[string]time.Duration{}, writesAgain: map[string]time.Duration{}}
	for ws := range owned {
		f.workspaces = append(f.workspaces, ws)
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(hardLimit()))
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		got := waitNewOwners(ctx, c.cli, owned, start, start.Add(hardLimit()))
		mu.Lock()
		f.newOwner = got
		mu.Unlock()
	})
	k := 0
	for _, ws := range f.workspaces {
		project := projectOf(ws)
		via := (gone + 1 + k%(len(c.nodes)-1)) % len(c.nodes)
		k++
		wg.Go(func() {
			name := "sonde-" + ws
			p := newAgent(name, via, c.nodes[via].mcpURL(), c.probeKeys[project], project, []string{"sonde/" + probeSlug})
			p.timeout = probeTimeout
			c.keep(p)
			defer p.close()
			if x, ok := p.untilAck(ctx, c.l); ok {
				mu.Lock()
				f.writesAgain[ws] = x.done.Sub(start)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Where the workspaces went: the placement should spread them.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if owners, err := readOwners(rctx, c.cli); err == nil {
		f.spread = map[string]int{}
		for _, ws := range f.workspaces {
			if _, moved := f.newOwner[ws]; moved {
				f.spread[c.nodeName(owners[ws].advertise)]++
			}
		}
	}
	return f
}

// nodeName is the name of the node with that advertise URL.
func (c *cluster) nodeName(advertise string) string {
	for _, n := range c.nodes {
		if n.advertise() == advertise {
			return n.name
		}
	}
	return "?" + advertise
}

// checkBounds fails the test for every failover time over its bound and
// for every workspace without one; without writes only the time to a new
// owner is checked (the SIGSTOP phase: there the bound that matters is
// the paused node's lease running out, and forwarders may wait on it). These are the only wall-clock asserts
// of the test, and deliberately so: TTL + 1 s to a new owner and TTL + 3 s
// to accepted writes are the acceptance criteria for failover —
// the property under test is a time. They are measured from the kill (or
// SIGSTOP) on the test's monotonic clock, and reported as numbers.
func checkBounds(t *testing.T, fs []failover, ttl time.Duration, writes bool) {
	for _, f := range fs {
		for _, ws := range f.workspaces {
			if d, ok := f.newOwner[ws]; !ok {
				t.Errorf("%s (%s): %s hat nach %s keinen neuen Eigentümer", f.label, f.node, ws, hardLimit())
			} else if d > ttl+time.Second {
				t.Errorf("%s (%s): neuer Eigentümer von %s nach %s, Grenze TTL + 1 s = %s", f.label, f.node, ws, sec(d), sec(ttl+time.Second))
			}
			if !writes {
				continue
			}
			if d, ok := f.writesAgain[ws]; !ok {
				t.Errorf("%s (%s): %s nimmt nach %s keine Schreibvorgänge an", f.label, f.node, ws, hardLimit())
			} else if d > ttl+3*time.Second {
				t.Errorf("%s (%s): Schreiben in %s wieder nach %s, Grenze TTL + 3 s = %s", f.label, f.node, ws, sec(d), sec(ttl+3*time.Second))
			}
		}
	}
}
