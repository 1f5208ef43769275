//go:build cluster

// Package clustertest is the machinery of the cluster test; the entry point
// is TestCluster in the top-level cluster_test.go:
//
//	go test -tags cluster -run TestCluster -v . [-cluster.runden=20] [-cluster.ttl=2s] [-cluster.modus=sync]
//
// Three etcd members run embedded in the test process, three Munin nodes
// (`munin serve --cluster`, built once) as processes, each in its own
// process group with its litestream child, replicating to a directory. Agents
// write over MCP through different nodes while, round after round, the
// busiest owner's process group is killed with SIGKILL and restarted with
// an empty data directory; then one owner is paused with SIGSTOP for
// 2 × TTL. Meanwhile agents with propose keys propose, and a reviewer per
// project approves and rejects over REST through a node that does not own
// the workspace (propose.go, review.go). At the end every acknowledged
// version must be readable through the API with exactly its content, every
// entry's versions 1..n without a gap, every acknowledged proposal and
// decision listed by the owner, every approval exactly one version
// (reviewcheck.go), and each workspace's replica, restored with litestream,
// intact and (in sync mode) holding every acknowledged version, proposal
// and decision. Meanwhile feed subscribers read GET /api/v1/changes with
// their own cursors and a live stream reader GET /api/v1/changes/stream,
// each through one node and on through the next when it dies; every
// acknowledged write must reach each of them exactly once, in order
// (feed_subscriber.go, feed_stream.go, feed_check.go). MCP subscribers,
// 2025-11-25 sessions on nodes that do not own the workspaces whose project
// URIs they subscribe to, must hear of every change committed while a
// session of theirs was open; a new session after a kill is a gap they
// report (mcp_sub.go, mcp_sub_check.go). A throughput phase
// compares the cluster with a single node under the same remember load.
//
// Every file carries the build tag cluster, so ordinary builds and go test
// ./... leave the package out.
package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// Run is the whole cluster test as the -cluster.* flags ask for it. It
// prints its tables to stdout.
func Run(t *testing.T) {
	if *clusterRunden < 0 || *clusterMCPAbonnenten < 0 || *clusterAgenten < 1 || *clusterBereiche < 1 || *clusterSlugs < 1 || *clusterTTL <= 0 ||
		(*clusterModus != "sync" && *clusterModus != "async") {
		t.Fatal("cluster.runden, cluster.mcpabonnenten ≥ 0, cluster.agenten, cluster.arbeitsbereiche, cluster.slugs ≥ 1, cluster.ttl > 0, cluster.modus sync oder async")
	}
	litestream := findLitestream(t)
	bin := buildMunin(t)
	logDir := *clusterProtokolle
	if logDir == "" {
		logDir = t.TempDir()
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	c := startCluster(t, bin, litestream, logDir, *clusterBereiche)
	fmt.Printf("Clustertest %s: %d etcd-Mitglieder, %d Knoten, %d Arbeitsbereiche, %d Agenten, TTL %s, Replikation %s, %d Runden, Protokolle in %s\n",
		begin.Format("2006-01-02 15:04"), etcdMembers, nodeCount, len(c.projects), *clusterAgenten, *clusterTTL, *clusterModus, *clusterRunden, logDir)

	var clusterRate float64
	var clusterCost, singleCost phaseCost
	if *clusterMessdauer > 0 {
		clusterRate, clusterCost = c.throughput(t, c.agents(t, *clusterLastAgenten, "last"), *clusterMessdauer)
	}

	// The rounds: the agents write all along.
	ctx, stopAgents := context.WithCancel(context.Background())
	t.Cleanup(stopAgents) // also when the test ends early
	agents := c.agents(t, *clusterAgenten, "agent")
	proposers := c.proposers(t, *clusterVorschlagende)
	reviewers := c.reviewers(t, proposers)
	writers := append(slices.Clone(agents), proposers...)
	c.mu.Lock()
	c.writers = writers
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range writers {
		wg.Go(func() { a.run(ctx, c.l) })
	}
	for _, r := range reviewers {
		wg.Go(func() { r.run(ctx, c.l) })
	}
	subs := c.subscribers(t, *clusterAbonnenten) // feed readers (feed_subscriber.go)
	startSubscribers(t, ctx, &wg, subs)
	msubs := c.mcpSubscribers(t, *clusterMCPAbonnenten) // MCP resource subscribers (mcp_sub.go)
	startMCPSubscribers(t, msubs)
	roundsBegin := time.Now()
	var rounds []failover
	for r := 1; r <= *clusterRunden; r++ {
		sleep(ctx, time.Duration(float64(*clusterDauer)*(0.5+rand.Float64())))
		f := c.killRound(t, r)
		rounds = append(rounds, f)
		t.Logf("Runde %2d: %s gekillt (%d Arbeitsbereiche), neuer Eigentümer max %s, Schreiben wieder max %s, Neustart %s, %d bestätigt",
			r, f.node, len(f.workspaces), maxOf(f.newOwner, f.workspaces), maxOf(f.writesAgain, f.workspaces), sec(f.restart), f.acks)
	}
	sleep(ctx, *clusterDauer)
	var stopped *paused
	if *clusterAnhalten {
		p := c.stopPhase(t)
		stopped = &p
		t.Logf("SIGSTOP: %s für %s angehalten, neuer Eigentümer max %s", p.node, 2**clusterTTL, maxOf(p.newOwner, p.workspaces))
	}
	// Every session a kill ended must come back as a 404 (sessions.go)
	// before the agents stop.
	lctx, lcancel := context.WithTimeout(context.Background(), hardLimit())
	lost404, waiting := awaitLostSessions(lctx, writers)
	lcancel()
	stopAgents()
	if !waitGroupBounded(&wg, callTimeout()+10*time.Second) {
		t.Fatal("Agenten enden nicht nach dem Ende der Runden")
	}
	roundsEnd := time.Now()
	acks := c.l.all()
	props, decs := c.l.reviewAcks()
	// An approval is a version like any other: read back, gapless, in the
	// replica, in order with the reviewer's other approvals.
	withApprovals := append(slices.Clone(acks), approvalAcks(decs)...)

	// Reading back, through the nodes that run (the paused one may have
	// ended itself) and from the replicas.
	var bases []string
	for _, n := range c.nodes {
		if n.p != nil && !n.p.exited() {
			bases = append(bases, n.advertise())
		}
	}
	if len(bases) == 0 {
		t.Fatal("kein Knoten läuft mehr zum Nachlesen")
	}
	reader := newRESTReader(bases, c.probeKeys)
	api := verifyAPI(context.Background(), reader, withApprovals, 8)
	var review *reviewVerdict
	if len(reviewers) > 0 {
		review = verifyReview(context.Background(), restReview{newRESTReader(bases, reviewerKeys(reviewers))}, reviewedProjects(reviewers), props, decs)
	}
	files, restored := c.verifyReplicas(t, withApprovals, props, decs)
	var stale *verdict
	if stopped != nil {
		stale = verifyAPI(context.Background(), reader, ackedBy(withApprovals, stopped.idx, stopped.at, time.Time{}), 4)
	}
	contra := contradictions(withApprovals)
	feeds := c.verifyFeeds(subs, acks, props, decs)
	mcps := c.verifyMCPSubscribers(msubs, acks, decs, stopped)
	c.stopNodes(t)

	var singleRate float64
	if *clusterMessdauer > 0 {
		singleRate, singleCost = c.singleThroughput(t, *clusterLastAgenten, *clusterMessdauer)
	}

	// The report.
	outcomes := map[string]int{}
	for _, a := range agents {
		o, _ := a.snapshot()
		for k, v := range o {
			outcomes[k] += v
		}
	}
	nBad, bad := c.unexpected(writers)
	for _, r := range reviewers {
		n, first := r.unexpected()
		nBad += n
		if first != "" {
			bad = append(bad, first)
		}
	}
	all := slices.Clone(rounds)
	if stopped != nil {
		all = append(all, stopped.failover)
	}
	fmt.Println()
	printRounds(os.Stdout, all)
	fmt.Println()
	printFailoverSummary(os.Stdout, rounds, *clusterTTL)
	fmt.Printf("Agenten während der Runden: %s; %.0f bestätigte remember/s über %s\n",
		outcomeLine(outcomes), rate(acks, roundsBegin, roundsEnd), roundsEnd.Sub(roundsBegin).Round(time.Second))
	killed := 0
	for _, f := range rounds {
		killed += f.sessions
	}
	if len(proposers) > 0 {
		printReview(os.Stdout, proposers, reviewers, props, decs, review)
	}
	printFeeds(os.Stdout, subs, feeds)
	printMCPSubscribers(os.Stdout, msubs, mcps, stopped)
	fmt.Printf("Sitzungen auf gekillten Knoten: %d, danach mit 404 beantwortet: %d, ohne 404: %d\n", killed, lost404, len(waiting))
	if stopped != nil {
		back := fmt.Sprintf("bestätigt wieder %s nach SIGCONT", sec(stopped.back))
		if !stopped.ok {
			back = fmt.Sprintf("bestätigt bis %s nach SIGCONT nichts mehr", sec(recoveryLimit()))
		}
		fmt.Printf("Angehaltener Knoten %s: Anfragen ab SIGSTOP: %s; während der Pause gesendet und bestätigt: %d; ab SIGSTOP bestätigt und geprüft: %d, verloren %d; %s; /readyz danach %d; %s\n",
			stopped.node, outcomeLine(c.l.watchedOutcomes()), len(ackedInPause(acks, *stopped)), stale.acks, stale.lost, back, stopped.ready, exitLine(*stopped))
	}
	printVerdict(os.Stdout, "Nachlesen über die API", api)
	printVerdict(os.Stdout, fmt.Sprintf("Replikate (%d Arbeitsbereiche wiederhergestellt, integrity_check full)", restored), files)
	if len(contra) > 0 {
		fmt.Printf("Widersprüche in den Bestätigungen: %d\n", len(contra))
		for _, s := range contra[:min(len(contra), maxProblems)] {
			fmt.Printf("  %s\n", s)
		}
	}
	if *clusterMessdauer > 0 {
		printThroughput(os.Stdout, *clusterLastAgenten, *clusterMessdauer, *clusterModus, clusterRate, singleRate)
		costLine(os.Stdout, "Cluster", clusterCost)
		costLine(os.Stdout, "ein Knoten", singleCost)
	}
	fmt.Printf("Dauer %s\n", time.Since(begin).Round(time.Second))

	// The verdict.
	checkBounds(t, rounds, *clusterTTL, true)
	if stopped != nil {
		checkBounds(t, []failover{stopped.failover}, *clusterTTL, false)
	}
	syncMode := *clusterModus == "sync"
	if api.gaps > 0 || files.gaps > 0 {
		t.Errorf("Lücken in den Fassungen: %d über die API, %d in den Replikaten", api.gaps, files.gaps)
	}
	if syncMode && (api.lost > 0 || files.lost > 0 || len(contra) > 0) {
		t.Errorf("bestätigte Fassungen verloren: %d über die API, %d in den Replikaten, %d Widersprüche", api.lost, files.lost, len(contra))
	}
	if review != nil {
		checkReview(t, review, props, decs, syncMode)
	}
	checkFeeds(t, subs, feeds, syncMode, *clusterRunden)
	checkMCPSubscribers(t, msubs, mcps)
	// What a paused node received while stopped it can only answer after
	// waking, when its lease has run out: it must answer unavailable (issue
	// 12, point 5), not acknowledge — not even what it might forward.
	if stopped != nil {
		if early := ackedInPause(acks, *stopped); len(early) > 0 {
			t.Errorf("der angehaltene Knoten %s bestätigte %d Schreibvorgänge, die er während der Pause erhielt, zuerst %s %s v%d",
				stopped.node, len(early), early[0].project, early[0].slug, early[0].version)
		}
	}
	// Its lease is lost for good: it stops, so that a supervisor starts it
	// again (app.App.Serve, status 2 from main).
	if stopped != nil && (!stopped.exited || stopped.exit != 2) {
		t.Errorf("der angehaltene Knoten %s ohne Lease: %s; erwartet: beendet mit Status 2", stopped.node, exitLine(*stopped))
	}
	if stale != nil && stale.lost > 0 {
		t.Errorf("der angehaltene Knoten %s bestätigte nach SIGSTOP %d Fassungen, die es nicht gibt", stopped.node, stale.lost)
	}
	// A session a kill ended must be answered by 404 when its agent comes
	// back to the restarted node (issue 12, point 3).
	if len(waiting) > 0 {
		t.Errorf("%d Agenten hielten eine Sitzung auf einem gekillten Knoten und bekamen danach kein 404: %v", len(waiting), waiting)
	}
	if nBad > 0 {
		t.Errorf("%d unerwartete Fehler der Agenten und Sonden, zuerst: %v", nBad, bad)
	}
	if len(c.l.written()) < len(c.projects) {
		t.Errorf("nur %d von %d Arbeitsbereichen bekamen bestätigte Schreibvorgänge: der Test bewies zu wenig", len(c.l.written()), len(c.projects))
	}
}

// ackedBy returns the acks of calls sent to node in [from, to) (zero to:
// no end).
// exitLine says how the paused node ended.
func exitLine(p paused) string {
	if !p.exited {
		return fmt.Sprintf("lief %s danach noch", exitLimit)
	}
	return fmt.Sprintf("beendete sich mit Status %d", p.exit)
}

// ackedInPause lists the writes the paused node received while it was
// stopped (sent after the SIGSTOP had gone out, before SIGCONT) and
// acknowledged after it woke: the issue forbids exactly these. An answer
// that came before SIGCONT was given before the signal landed.
func ackedInPause(acks []ack, p paused) []ack {
	var out []ack
	for _, a := range ackedBy(acks, p.idx, p.stopped, p.cont) {
		if !a.done.Before(p.cont) {
			out = append(out, a)
		}
	}
	return out
}

func ackedBy(acks []ack, node int, from, to time.Time) []ack {
	var out []ack
	for _, a := range acks {
		if a.node == node && !a.sent.Before(from) && (to.IsZero() || a.sent.Before(to)) {
			out = append(out, a)
		}
	}
	return out
}

// waitGroupBounded waits for wg at most d and reports whether it ended.
func waitGroupBounded(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// verifyReplicas restores each written workspace's replica at its current
// owner's epoch (the highest epoch directory if etcd shows no owner) and
// compares it with the acks. In async mode a restore may lack the newest
// acks; the caller decides what a loss means.
func (c *cluster) verifyReplicas(t *testing.T, acks []ack, props []proposalAck, decs []decisionAck) (*verdict, int) {
	v := &verdict{}
	ctx := context.Background()
	owners, err := readOwners(ctx, c.cli)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]ack{}
	for _, a := range acks {
		per[workspaceOf(a.project)] = append(per[workspaceOf(a.project)], a)
	}
	restored := 0
	for ws, wsAcks := range per {
		epoch := owners[ws].epoch
		if latest, err := latestEpoch(c.replicaDir, ws); err != nil {
			v.problem(true, false, "%s: kein Replikat: %v", ws, err)
			continue
		} else if epoch == 0 || latest > epoch {
			v.problem(false, latest > epoch && epoch != 0, "%s: Eigentümer-Epoche %d, höchste Replikat-Epoche %d", ws, epoch, latest)
			epoch = latest
		}
		out := filepath.Join(t.TempDir(), ws+".db")
		if err := restore(ctx, c.litestream, epochDir(c.replicaDir, ws, epoch), out); err != nil {
			v.problem(true, false, "%s: %v", ws, err)
			continue
		}
		s, integrity, err := readStored(out, ws)
		if err != nil || integrity != "ok" {
			v.problem(false, true, "%s Epoche %d: integrity_check %q, %v", ws, epoch, integrity, err)
			continue
		}
		restored++
		compareStored(s, wsAcks, v)
		if ps, err := readStoredProposals(out); err != nil {
			v.problem(false, true, "%s Epoche %d: Vorschläge nicht lesbar: %v", ws, epoch, err)
		} else {
			compareStoredProposals(ps, inWorkspace(props, ws, func(p proposalAck) string { return p.project }),
				inWorkspace(decs, ws, func(d decisionAck) string { return d.proposal.project }), v)
		}
	}
	return v, restored
}
