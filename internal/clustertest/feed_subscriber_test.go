//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// A polling subscriber and a stream reader start on a node that does not
// answer, go on through the next one, and keep their cursors across two
// restarts of the server while agents write: at the end each received
// every acknowledged version exactly once, in order — with cursors that a
// new process accepts, and the stream resumed with Last-Event-ID.
func TestSubscribersAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startInproc(t, dir, "127.0.0.1:0")
	projects := []string{"bereich-0/p", "bereich-1/p"}
	dead := &node{name: "n0", addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	c := &cluster{nodes: []*node{dead, {name: "n1", addr: srv.addr}}, projects: projects}
	keys := func(agent string, role memory.Role) []string {
		var out []string
		for _, p := range projects {
			ws, pr := splitProject(p)
			tok, _, err := srv.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: ws, Project: pr}, agent, role)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tok)
		}
		return out
	}
	poller := newSubscriber(c, "abo-0", "read", keys("abo-0", memory.RoleRead), projects, 0, false)
	streamer := newSubscriber(c, "strom-0", "admin", keys("strom-0", memory.RoleAdmin), projects, 0, true)
	subs := []*subscriber{poller, streamer}

	l := &ledger{}
	var agents []*agent
	for i := range 4 {
		p := projects[i%2]
		name := fmt.Sprintf("agent-%d", i)
		agents = append(agents, newAgent(name, 0, "http://"+srv.addr+"/mcp", srv.key(p, name), p, ownSlugs(name, 2)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() { a.run(ctx, l) })
	}
	startSubscribers(t, ctx, &wg, subs)
	srv = restartedTwice(t, srv, dir)
	cancel()
	if !waitGroupBounded(&wg, callTimeout()+5*time.Second) {
		t.Fatal("agents and subscribers do not end")
	}
	acks := l.all()
	if len(acks) < 20 {
		t.Fatalf("only %d acks: the test proves too little", len(acks))
	}
	vs := c.verifyFeeds(subs, acks, nil, nil)
	for i, s := range subs {
		v := vs[i]
		t.Logf("%s: %d received, %d expected, %d found; %d connections/pages, %d switches, %d resyncs; %s",
			s.name, v.received, v.expected, v.found, s.pages, s.switches, s.resyncs, outcomeLine(s.outcomes))
		if v.missing+v.twice+v.disorder+v.wrong+v.hidden > 0 || v.found != len(acks) || !s.drained || s.nBad > 0 {
			t.Errorf("%s: %+v, drained %v, unexpected %d %s", s.name, *v, s.drained, s.nBad, s.firstBad)
		}
		if s.switches == 0 {
			t.Errorf("%s never went on through another node", s.name)
		}
	}
	if streamer.pages < 3 {
		t.Errorf("the stream was opened %d times; want one per server process (3)", streamer.pages)
	}
}

// restartedTwice lets srv run a while, replaces it twice by a new process
// on the same directory and address, lets the last one run a while and
// returns it.
func restartedTwice(t *testing.T, srv *inproc, dir string) *inproc {
	const run = 400 * time.Millisecond
	time.Sleep(run)
	for range 2 {
		srv.stop()
		srv = startInproc(t, dir, srv.addr)
		time.Sleep(run)
	}
	return srv
}

// TestCutOff: an answer cut off by a node's death is no answer (the
// subscriber goes on elsewhere); an answer that is no JSON is a finding.
func TestCutOff(t *testing.T) {
	var v struct{ Changes []feedChange }
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"changes":[{"project":"b/p"`, true},
		{``, true},
		{`{"changes":[]}`, false},
		{`<html>`, false},
		{`{"changes":7}`, false},
	} {
		if got := cutOff(json.NewDecoder(strings.NewReader(tc.body)).Decode(&v)); got != tc.want {
			t.Errorf("%q: cut off %v, want %v", tc.body, got, tc.want)
		}
	}
}
