//go:build last

// The server under load: a real Munin in this process on a free port, its
// seed data and keys, and the cold start on the same data directory.

package lasttest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/app"
	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/service"
)

// server is one running in-process Munin.
type server struct {
	t      testing.TB
	dir    string
	cfg    app.Config
	app    *app.App
	url    string
	cancel context.CancelFunc
	done   chan error
	// checkers are read keys, one per project, for the check.
	checkers []string
	// roleOf is the role of agent i's keys (nil: write), set before seed.
	roleOf func(i int) memory.Role
}

func startServer(t testing.TB, dir string, searchLogOff bool) *server {
	t.Helper()
	s := &server{t: t, dir: dir, cfg: app.Config{
		Config: config.Config{
			Server:  config.Server{Addr: "127.0.0.1:0"},
			Storage: config.Storage{DataDir: dir, Synchronous: *lastSynchronous},
			Search:  config.Search{SearchLogOff: searchLogOff, RecallExact: *lastGenau, SimilarOff: *lastAehnlichAus},
			Limits: config.Limits{
				BudgetOff: true,
				// Admission control is off unless -last.zulassung sets it: then the
				// agents beyond the limit get 429 and retry after Retry-After.
				MaxInFlight: *lastZulassung,
				// Each agent recalls in a closed loop, ~33/s with 32 agents and
				// hundreds/s in a sweep's first steps: far beyond one key's rate.
				RecallRate: -1,
				// Recalls at once, per key and per project (half the cores): a
				// closed loop of 32 agents in one project would queue behind them.
				RecallConcurrency: -1,
				// A sweep's step starts hundreds of agents in one project at once.
				SessionOpenRate: -1,
				// The same for every request of a key: the load test measures the
				// server's speed, not the limits that protect keys from each other.
				RatePerKey:        -1,
				MaxInFlightPerKey: -1,
			},
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
	if n := *lastAbonnenten; n > 0 {
		// Every run of the comparison (with and without subscribers) gets
		// the same bounds: n sessions with a GET stream each in one
		// project, beside the agents and the sessions memoryPerSession adds.
		streamLimits(&s.cfg.Limits, n, 2**lastAgenten+8)
	}
	if d := *lastEinbettung; d > 0 {
		// A test endpoint answering after d stands in for a model server.
		ep := embedtest.New(384)
		ep.SetDelay(d)
		t.Cleanup(ep.Close)
		s.cfg.Embeddings.URL, s.cfg.Embeddings.Model = ep.URL, "lasttest"
	}
	s.start()
	return s
}

func (s *server) start() {
	a, err := app.Open(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.app, s.url, s.cancel, s.done = a, "http://"+ln.Addr().String()+"/mcp", cancel, make(chan error, 1)
	go func() { s.done <- a.Serve(ctx, ln) }()
}

func (s *server) stop() {
	s.cancel()
	if err := <-s.done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
	if err := s.app.Close(); err != nil {
		s.t.Errorf("close: %v", err)
	}
}

// seed creates the projects, pre-seeds entries and makes the agents' keys
// and a read key per project for the check (s.checkers). Agent i works in
// project i mod len(projects) with one key; with multi it holds a key for
// every project, all in one comma-separated list (one Authorization header),
// the list starting at project i mod len(projects).
func (s *server) seed(projects []memory.ProjectRef, agents int, multi bool) []string {
	t := s.t
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(projects))
	s.checkers = make([]string, len(projects))
	for pi, ref := range projects {
		tok, _, err := s.app.Svc.CreateKey(ctx, ref, "saat", memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		key, err := s.app.Svc.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if s.checkers[pi], _, err = s.app.Svc.CreateKey(ctx, ref, "pruefer", memory.RoleRead); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range *lastEintraege {
				content, tag := seedContent(i)
				in := service.RememberRequest{Slug: seededSlug(i), Content: content, Tags: []string{tag}}
				if _, err := s.app.Svc.Remember(ctx, key, in); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tokens := make([]string, agents)
	for i := range agents {
		var mine []string
		for j := range projects {
			if !multi && j > 0 {
				break
			}
			ref := projects[(i+j)%len(projects)]
			role := memory.RoleWrite
			if s.roleOf != nil {
				role = s.roleOf(i)
			}
			tok, _, err := s.app.Svc.CreateKey(ctx, ref, agentName(i), role)
			if err != nil {
				t.Fatal(err)
			}
			mine = append(mine, tok)
		}
		tokens[i] = strings.Join(mine, ",")
	}
	return tokens
}

// measureColdStart restarts the server on the same data directory and times
// the first recall answer: the project's index opens from disk on first use
// (and is built only if it cannot be trusted).
func measureColdStart(t testing.TB, srv *server, token string) {
	srv.stop()
	start := time.Now()
	srv.start()
	opened := time.Since(start)
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	a, _, err := connect(context.Background(), hc, srv.url, token, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.c.Close()
	callStart := time.Now()
	if _, err := a.call(context.Background(), "recall", map[string]any{"query": terms[0]}); err != nil {
		t.Fatal(err)
	}
	first, total := time.Since(callStart), time.Since(start)
	if _, err := a.call(context.Background(), "recall", map[string]any{"query": terms[1]}); err != nil {
		t.Fatal(err)
	}
	second := a.lat["recall"][1]
	fmt.Printf("Kaltstart: %s vom Öffnen bis zur ersten recall-Antwort (Öffnen %s, erstes recall mit Öffnen des Index über %d Einträge %s, zweites recall %s)\n",
		ms(total), ms(opened), *lastEintraege+*lastSlugs, ms(first), ms(second))
}

// streamLimits raises the session and stream bounds so that n subscribers,
// each with its own key and one GET stream, all in one project, fit beside
// others more sessions: a project may hold 4× a key's streams
// (MaxStreamsPerKey) and 1/8 of the server's sessions (MaxSessions). The
// bounds per key stay as they are unless they are below the defaults.
func streamLimits(l *config.Limits, n, others int) {
	l.MaxStreamsPerKey = max(mcpserver.DefaultMaxStreamsPerKey, (n+3)/4)
	l.MaxSessions = max(mcpserver.DefaultMaxSessions, 8*(n+others))
}
