//go:build cluster

package clustertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"munin/internal/app"
	"munin/internal/config"
	"munin/internal/memory"
)

// inproc is a real single Munin served in this process: what the agents
// and the verifier are tested against until a cluster runs.
type inproc struct {
	t      *testing.T
	dir    string
	addr   string
	a      *app.App
	cancel context.CancelFunc
	done   chan error
}

func startInproc(t *testing.T, dir, addr string) *inproc {
	t.Helper()
	a, err := app.Open(app.Config{Config: config.Config{Server: config.Server{Addr: addr}, Storage: config.Storage{DataDir: dir}, Limits: config.Limits{BudgetOff: true, RecallRate: -1, RecallConcurrency: -1, RatePerKey: -1, MaxInFlightPerKey: -1}}, Exclusive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &inproc{t: t, dir: dir, addr: ln.Addr().String(), a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Serve(ctx, ln) }()
	t.Cleanup(s.stop)
	return s
}

func (s *inproc) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	if err := <-s.done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
	if err := s.a.Close(); err != nil {
		s.t.Errorf("close: %v", err)
	}
}

func (s *inproc) key(project, agent string) string {
	s.t.Helper()
	ws, p := splitProject(project)
	tok, _, err := s.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: ws, Project: p}, agent, memory.RoleWrite)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// An agent whose node went away and came back (a new process, which does
// not know the session) gets a 404 or no answer, opens a new session on
// the same node and goes on writing; the verifier then finds every
// acknowledged version, through the API and in the files, and no gap.
func TestAgentsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startInproc(t, dir, "127.0.0.1:0")
	projects := []string{"bereich-0/p", "bereich-1/p"}
	tokens := map[string]string{}
	for _, p := range projects {
		tokens[p] = srv.key(p, "pruefer")
	}
	l := &ledger{}
	url := "http://" + srv.addr + "/mcp"

	// One agent, step by step: while the node is down its call finds no
	// one (it keeps its session); the restarted node does not know the
	// session and answers 404, and the agent's next call, in a new session,
	// is acknowledged.
	one := newAgent("einer", 0, url, srv.key(projects[0], "einer"), projects[0], ownSlugs("einer", 2))
	defer one.close()
	pause := reconnectMin
	if _, ok := one.step(context.Background(), l, &pause); !ok {
		t.Fatalf("first write: %v", one.outcomes)
	}
	srv.stop()
	if !one.expectLostSession() {
		t.Fatal("the agent holds no session after a write (legacy protocol)")
	}
	if _, ok := one.step(context.Background(), l, &pause); ok {
		t.Fatal("a write was acknowledged by a stopped node")
	}
	srv = startInproc(t, dir, srv.addr)
	var recovered bool
	for range 20 {
		if _, ok := one.step(context.Background(), l, &pause); ok {
			recovered = true
			break
		}
	}
	o, _ := one.snapshot()
	waiting, lost := one.awaiting()
	if !recovered || o[outConnection] == 0 || o[outSession] != 1 || waiting || lost != 1 {
		t.Fatalf("after the restart: recovered %v, outcomes %v, still awaiting the 404 %v; want no answer while down, then one 404, then an ack", recovered, o, waiting)
	}
	t.Logf("one agent across a restart: %s", outcomeLine(o))

	// Many agents writing while the node restarts twice.
	var agents []*agent
	for i := range 8 {
		p := projects[i%2]
		name := "agent-" + string(rune('a'+i))
		agents = append(agents, newAgent(name, 0, url, srv.key(p, name), p, ownSlugs(name, 3)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() { a.run(ctx, l) })
	}
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		srv.stop()
		srv = startInproc(t, dir, srv.addr)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	if !waitGroupBounded(&wg, callTimeout()+5*time.Second) {
		t.Fatal("agents do not end")
	}
	// A call an agent gave up on when it stopped may still commit on the
	// server (unacknowledged, so allowed) after the agent ended; a restart
	// drains such calls, so that nothing changes while the entries are read
	// back (a version appearing between reading an entry and its history
	// would look like a gap).
	srv.stop()
	srv = startInproc(t, dir, srv.addr)
	acks := l.all()
	total := map[string]int{}
	for _, a := range agents {
		o, bad := a.snapshot()
		for k, v := range o {
			total[k] += v
		}
		if bad != "" {
			t.Errorf("unexpected error: %s", bad)
		}
	}
	t.Logf("8 agents across two restarts: %s", outcomeLine(total))
	if total[outOK] != len(acks)-2 || len(acks) < 20 {
		t.Fatalf("%d acks in the ledger, agents counted %v", len(acks), total)
	}
	if c := contradictions(acks); len(c) > 0 {
		t.Fatalf("contradictions: %v", c)
	}

	v := verifyAPI(context.Background(), newRESTReader([]string{"http://" + srv.addr}, tokens), acks, 4)
	if v.lost != 0 || v.gaps != 0 || v.acks != len(acks) || v.versions < len(acks) || v.entries != len(bySlug(acks)) || v.entries < 8*3 {
		t.Fatalf("through the API: %+v", v)
	}
	srv.stop()
	files := &verdict{}
	for _, ws := range []string{"bereich-0", "bereich-1"} {
		s, integrity, err := readStored(filepath.Join(dir, ws+".db"), ws)
		if err != nil || integrity != "ok" {
			t.Fatalf("%s: %q %v", ws, integrity, err)
		}
		var mine []ack
		for _, a := range acks {
			if workspaceOf(a.project) == ws {
				mine = append(mine, a)
			}
		}
		compareStored(s, mine, files)
	}
	if files.lost != 0 || files.gaps != 0 || files.acks != len(acks) {
		t.Fatalf("in the files: %+v", files)
	}
	if _, err := os.Stat(filepath.Join(dir, "bereich-0.db")); err != nil {
		t.Fatal(err)
	}
}
