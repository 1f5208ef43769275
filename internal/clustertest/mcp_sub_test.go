//go:build cluster

package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// checkMCP: a change committed in a window needs an update of its project
// in that window at or after its commit; one committed between windows,
// or shortly before a window broke, is excused; one shortly before the
// test's own end is not; an update of a URI not subscribed is counted.
func TestCheckMCP(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // any instant: only differences count
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const p, q = "b0/p", "b1/p"
	windows := []mcpWindow{
		{node: 1, start: map[string]time.Time{p: at(0), q: at(1)}, end: at(10), cause: endStream},
		{node: 2, start: map[string]time.Time{p: at(12), q: at(12)}, end: at(30), cause: endStop},
	}
	notes := []mcpNote{
		{project: p, at: at(2.5), window: 0, via: viaOther},
		{project: q, at: at(5), window: 0, via: viaOwner},
		{project: p, at: at(20), window: 1},
		{project: "", at: at(21), window: 1},
	}
	ch := func(project, slug string, v int, s float64) feedChange {
		return feedChange{Project: project, Slug: slug, Version: v, Kind: "remember", At: at(s)}
	}
	changes := []feedChange{
		ch(p, "a", 1, 2),      // heard at 2.5
		ch(q, "b", 1, 0.5),    // before q was subscribed: a gap
		ch(q, "b", 2, 4),      // heard at 5
		ch(p, "a", 2, 8),      // not heard, 2 s before the break: excused
		ch(q, "b", 3, 11),     // between the windows: a gap
		ch(p, "a", 3, 19),     // heard at 20
		ch(p, "a", 4, 28),     // not heard, before the test's end: missing
		ch("b2/p", "c", 1, 5), // not subscribed: not counted
		{Project: p, Slug: "a", Kind: "propose", At: at(25)}, // no resource changed
	}
	acked := map[string]time.Time{versionKey(p, "a", 1): at(3)}
	v := checkMCP("mcp-0", windows, notes, changes, []string{p, q}, acked)
	want := mcpVerdict{changes: 7, inWindow: 5, notified: 3, missing: 1, before: 1, gap: 1, tail: 1, notes: 4, foreign: 1, nonOwner: 1, viaOwner: 1, heardOther: 1}
	got := mcpVerdict{changes: v.changes, inWindow: v.inWindow, notified: v.notified, missing: v.missing, before: v.before, gap: v.gap,
		tail: v.tail, notes: v.notes, foreign: v.foreign, nonOwner: v.nonOwner, viaOwner: v.viaOwner, heardOther: v.heardOther}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("verdict %+v, want %+v", got, want)
	}
	if len(v.delays) != 3 || v.delays[0] != 500*time.Millisecond || len(v.ackDelays) != 1 || v.ackDelays[0] != -500*time.Millisecond ||
		len(v.otherDelays) != 1 || v.otherDelays[0] != 500*time.Millisecond {
		t.Errorf("delays %v, ack delays %v, through a non-owner %v; want [0.5s 1s 1s], [-0.5s], [0.5s]", v.delays, v.ackDelays, v.otherDelays)
	}
	if len(v.problems) != 2 || !strings.Contains(v.problems[1], "b0/p a v4") {
		t.Errorf("problems %q; want the foreign updates and b0/p a v4", v.problems)
	}

	if g := gaps(windows); len(g) != 1 || g[0] != 2*time.Second {
		t.Errorf("gaps %v, want [2s]", g)
	}

	// The same window, still open: the missing change is one the final
	// wait waits for; an open window excuses nothing.
	open := []mcpWindow{windows[0], {node: 2, start: windows[1].start}}
	if v := checkMCP("mcp-0", open, notes, changes, []string{p, q}, nil); v.missing != 1 || v.open != 1 {
		t.Errorf("open window: missing %d, open %d; want 1, 1", v.missing, v.open)
	}
	// A SIGSTOP of node 2 at 18 s ends its window then: v3 and v4 lie in
	// the gap after it, and nothing is missing.
	cut := cutAtPause(windows, 2, at(18))
	if v := checkMCP("mcp-0", cut, notes, changes, []string{p, q}, nil); v.missing != 0 || v.gap != 3 || cut[1].cause != endPaused || windows[1].cause != endStop {
		t.Errorf("paused: missing %d, gap %d, cause %q (original %q); want 0, 3, %q, %q", v.missing, v.gap, cut[1].cause, windows[1].cause, endPaused, endStop)
	}
}

// An MCP subscriber starts on a node that does not answer, goes on through
// the next one, and after each of two restarts of the server opens a new
// session and subscribes again while agents write: every change committed
// inside one of its sessions was followed by an update there.
func TestMCPSubscriberAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startInproc(t, dir, "127.0.0.1:0")
	projects := []string{"bereich-0/p", "bereich-1/p"}
	dead := &node{name: "n0", addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	c := &cluster{nodes: []*node{dead, {name: "n1", addr: srv.addr}}, projects: projects}
	var tokens []string
	for _, p := range projects {
		ws, pr := splitProject(p)
		tok, _, err := srv.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: ws, Project: pr}, "mcp-0", memory.RoleRead)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	m := newMCPSubscriber(c, "mcp-0", tokens, projects, 0)
	subs := []*mcpSubscriber{m}
	startMCPSubscribers(t, subs)

	l := &ledger{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 4 {
		p := projects[i%2]
		name := fmt.Sprintf("agent-%d", i)
		a := newAgent(name, 0, "http://"+srv.addr+"/mcp", srv.key(p, name), p, ownSlugs(name, 2))
		wg.Go(func() { a.run(ctx, l) })
	}
	const run = 1500 * time.Millisecond
	time.Sleep(run)
	for range 2 {
		srv.stop()
		srv = startInproc(t, dir, srv.addr)
		time.Sleep(run)
	}
	cancel()
	if !waitGroupBounded(&wg, callTimeout()+5*time.Second) {
		t.Fatal("agents do not end")
	}
	defer srv.stop()
	acks := l.all()
	v := c.verifyMCPSubscribers(subs, acks, nil, nil)[0]
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Logf("%d acks; %d sessions, %d updates, %d list_changed; %d changes, %d in sessions, %d heard, %d missing, %d in gaps, %d before a break; %s",
		len(acks), len(m.windows), v.notes, m.listChanged, v.changes, v.inWindow, v.notified, v.missing, v.gap, v.tail, outcomeLine(m.outcomes))
	if len(acks) < 20 || v.changes < len(acks) {
		t.Fatalf("%d acks, %d changes in the feed: the test proves too little", len(acks), v.changes)
	}
	if v.missing > 0 || v.foreign > 0 || m.nBad > 0 || !m.feed.drained {
		t.Errorf("missing %d, foreign %d, unexpected %d (%s), feed drained %v: %q", v.missing, v.foreign, m.nBad, m.firstBad, m.feed.drained, v.problems)
	}
	// One session per server process; the final one heard the last
	// changes, so at least a third of the changes were heard.
	if len(m.windows) < 3 || v.notified < v.changes/3 {
		t.Errorf("%d sessions, %d of %d changes heard; want ≥ 3 sessions and a third heard", len(m.windows), v.notified, v.changes)
	}
	if m.outcomes[outConnection] == 0 {
		t.Errorf("the subscriber never found a node that did not answer: %v", m.outcomes)
	}
}
