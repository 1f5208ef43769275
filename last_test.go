//go:build last

// The load test: go test -tags last -run TestLast -v . (see LASTTEST.md).
// It starts the real server in-process on a free port over a temp data
// directory and drives it over HTTP exactly as agents do: each agent has its
// own key and its own MCP session. It fails if any call failed, if a version
// was lost, or if the index missed an entry's last version.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/store"
)

var (
	lastAgenten       = flag.Int("last.agenten", 32, "Agenten je Aufbau")
	lastDauer         = flag.Duration("last.dauer", 10*time.Second, "Dauer je Aufbau (und je Stufe)")
	lastProjekte      = flag.Int("last.projekte", 4, "Projekte bzw. Arbeitsbereiche in Aufbau 2 und 3")
	lastEintraege     = flag.Int("last.eintraege", 500, "vorab angelegte Einträge je Projekt")
	lastSlugs         = flag.Int("last.slugs", 20, "umkämpfte Slugs je Projekt")
	lastSchreibanteil = flag.Int("last.schreibanteil", 30, "Anteil remember in Prozent; der Rest recall:get 2:1")
	lastStufen        = flag.String("last.stufen", "", "Stufen-Sweep, z. B. 1,2,4,8,16,32,64,128,256 (ein Projekt)")
	lastSynchronous   = flag.String("last.synchronous", "", "SQLite synchronous des Servers: NORMAL oder FULL (leer: Serverstandard)")
	lastSuchprotokoll = flag.String("last.suchprotokoll", "an", "Suchprotokoll: an, aus oder vergleich (Aufbau 1 mit und ohne)")
	lastAufbauten     = flag.String("last.aufbauten", "1,2,3", "welche Aufbauten laufen")
	lastProfil        = flag.String("last.profil", "", "CPU-Profil der Lastphase von Aufbau 1 in diese Datei")
)

// terms are the eight domain words recall looks for; every pre-seeded entry
// carries two of them.
var terms = []string{"datenbank", "schnittstelle", "sicherung", "migration", "zugriff", "leistung", "protokoll", "speicher"}

// Tool names, in the order of the table.
var tools = []string{"verbinden", "recall", "get", "remember"}

// aufbau is one setup: the projects and which agent writes where.
type aufbau struct {
	name     string
	projects []memory.ProjectRef
}

func aufbauten(n int) []aufbau {
	var zwei, drei []memory.ProjectRef
	for i := range n {
		zwei = append(zwei, memory.ProjectRef{Workspace: "bereich", Project: fmt.Sprintf("p%d", i)})
		drei = append(drei, memory.ProjectRef{Workspace: fmt.Sprintf("bereich-%d", i), Project: "p"})
	}
	return []aufbau{
		{"ein Projekt", []memory.ProjectRef{{Workspace: "bereich", Project: "p"}}},
		{fmt.Sprintf("ein Arbeitsbereich mit %d Projekten", n), zwei},
		{fmt.Sprintf("%d Arbeitsbereiche mit je einem Projekt", n), drei},
	}
}

func TestLast(t *testing.T) {
	if *lastAgenten < 1 || *lastProjekte < 1 || *lastSlugs < 1 || *lastEintraege < 1 ||
		*lastSchreibanteil < 0 || *lastSchreibanteil > 100 {
		t.Fatal("last.agenten, last.projekte, last.slugs, last.eintraege müssen ≥ 1 sein, last.schreibanteil 0..100")
	}
	fmt.Printf("Lasttest %s: %d Agenten, %s je Aufbau, %d %% remember, %d Einträge und %d umkämpfte Slugs je Projekt, GOMAXPROCS %d\n",
		time.Now().Format("2006-01-02 15:04"), *lastAgenten, *lastDauer, *lastSchreibanteil, *lastEintraege, *lastSlugs, runtime.GOMAXPROCS(0))

	raw := rawBaseline(t)
	fmt.Printf("Rohschreiben (eine Fassungszeile je Transaktion, eine Verbindung, synchronous=%s): %.0f Zeilen/s\n", syncName(), raw)

	wanted := strings.Split(*lastAufbauten, ",")
	for i, a := range aufbauten(*lastProjekte) {
		if !slices.Contains(wanted, strconv.Itoa(i+1)) {
			continue
		}
		t.Run(fmt.Sprintf("Aufbau%d", i+1), func(t *testing.T) {
			fmt.Printf("\n=== Aufbau %d: %s, %d Agenten, %s\n", i+1, a.name, *lastAgenten, *lastDauer)
			logOff := *lastSuchprotokoll == "aus"
			res := runSetup(t, a, *lastAgenten, lauf{searchLogOff: logOff, profile: i == 0 && *lastProfil != "", coldStart: i == 0})
			if i == 0 && *lastSchreibanteil == 100 {
				// The disk is shared and noisy: raw is measured right before
				// and right after the full path, and the ratio uses the mean.
				after := rawBaseline(t)
				mean := (raw + after) / 2
				fmt.Printf("Vollweg/Rohschreiben: %.2f (remember %.0f/s ÷ roh %.0f/s, Mittel aus %.0f/s davor und %.0f/s danach)\n",
					res.rememberRate()/mean, res.rememberRate(), mean, raw, after)
			}
			if i == 0 && *lastSuchprotokoll == "vergleich" {
				compareSearchLog(t, a, res)
			}
		})
	}
	if *lastStufen != "" {
		t.Run("Stufen", sweep)
	}
}

// rawBaseline measures single-row INSERT transactions of a version row into
// a workspace file over one connection with the server's pragmas, for
// -last.dauer, and returns rows per second.
func rawBaseline(t *testing.T) float64 {
	ctx := context.Background()
	w, err := store.OpenRawWriter(ctx, filepath.Join(t.TempDir(), "roh.db"), *lastSynchronous)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	content := rememberContent(0, 0, "rohwort")
	n, start := 0, time.Now()
	for time.Since(start) < *lastDauer {
		if err := w.Insert(1, content); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

func syncName() string {
	if *lastSynchronous == "" {
		return store.DefaultSynchronous
	}
	return strings.ToUpper(*lastSynchronous)
}

// server is one running in-process Munin.
type server struct {
	t      *testing.T
	dir    string
	cfg    app.Config
	app    *app.App
	url    string
	cancel context.CancelFunc
	done   chan error
	// checkers are read keys, one per project, for the check.
	checkers []string
}

func startServer(t *testing.T, dir string, searchLogOff bool) *server {
	t.Helper()
	s := &server{t: t, dir: dir, cfg: app.Config{
		DataDir:   dir,
		Addr:      "127.0.0.1:0",
		BudgetOff: true,
		// Admission control is off unless -last.zulassung sets it: then the
		// agents beyond the limit get 429 and retry after Retry-After.
		MaxInFlight:  *lastZulassung,
		SearchLogOff: searchLogOff,
		Synchronous:  *lastSynchronous,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
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

// seed creates the projects, pre-seeds entries and makes one key per agent
// (agent i works in project i mod len(projects)) and a read key per project
// for the check (s.checkers).
func (s *server) seed(projects []memory.ProjectRef, agents int) []string {
	t := s.t
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(projects))
	s.checkers = make([]string, len(projects))
	for pi, ref := range projects {
		_, key, err := s.app.Svc.CreateKey(ctx, ref, "saat", memory.RoleWrite)
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
				a, b := terms[i%len(terms)], terms[(i/len(terms)+i+1)%len(terms)]
				in := service.RememberInput{
					Slug:    seededSlug(i),
					Content: fmt.Sprintf("Notiz %d zu %s und %s\n\nWas das Team über %s beschlossen hat und warum; offen bleibt die Frage nach %s.", i, a, b, a, b),
					Tags:    []string{a},
				}
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
		tok, _, err := s.app.Svc.CreateKey(ctx, projects[i%len(projects)], fmt.Sprintf("agent-%03d", i), memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	return tokens
}

// lauf says how runSetup runs a setup.
type lauf struct {
	searchLogOff bool // server flag: no search log
	profile      bool // CPU profile of the load phase into -last.profil
	coldStart    bool // restart afterwards and time the first recall
	quiet        bool // no table (repeated runs of a comparison)
}

// runSetup runs one setup on a fresh server: seed, connect (memory per
// session), load, check; optionally the cold start.
func runSetup(t *testing.T, a aufbau, n int, l lauf) result {
	dir := t.TempDir()
	srv := startServer(t, dir, l.searchLogOff)
	tokens := srv.seed(a.projects, n)
	hc := transportFor(n)

	agents, connWall := connectAll(t, hc, srv.url, tokens, 0)

	if l.profile {
		f, err := os.Create(*lastProfil)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	res := drive(agents, *lastDauer)
	res.cpu = cpuTime() - cpu0
	if l.profile {
		pprof.StopCPUProfile()
	}
	res.connWall = connWall
	res.lat["verbinden"] = agents[0].lat["verbinden"]
	if !l.quiet {
		printTable(res)
		fmt.Printf("Gruppen-Commit: %s\n", batchStats(srv.app))
		fmt.Printf("CPU: %.0f µs je Aufruf (Server und Agenten zusammen), %.2f Kerne ausgelastet\n", res.cpuPerCall(), res.cpu.Seconds()/res.dur.Seconds())
	}
	if failed := sum(res.errs); failed > 0 {
		t.Errorf("%d Aufrufe fehlgeschlagen, z. B. %s", failed, res.firstErr)
	}
	checkStock(t, srv, a.projects, res.written)
	if !l.quiet {
		memoryPerSession(t, srv.url, tokens)
	}
	for _, ag := range agents {
		ag.c.Close()
	}
	hc.CloseIdleConnections()
	if l.coldStart {
		measureColdStart(t, srv, tokens[0])
	}
	srv.stop()
	return res
}

// memoryPerSession connects len(tokens) more sessions, each over its own new
// connection as a new agent would, while the server is otherwise idle (index
// built, load over), and reports what they cost. Server and agents share the
// process, so the figure holds both ends of a session and its connection:
// an upper bound for the server's part.
func memoryPerSession(t *testing.T, url string, tokens []string) {
	hc := transportFor(len(tokens))
	defer hc.CloseIdleConnections()
	rss0, heap0 := memoryNow()
	g0 := runtime.NumGoroutine()
	more, _ := connectAll(t, hc, url, tokens, len(tokens))
	rss1, heap1 := memoryNow()
	g1 := runtime.NumGoroutine()
	n := float64(len(more))
	fmt.Printf("Speicher je Sitzung: %.0f KiB RSS, %.0f KiB Go-Heap und Stacks, %.1f Goroutinen (%d weitere Sitzungen: RSS %.1f → %.1f MiB, Heap+Stacks %.1f → %.1f MiB; Server und Agent zusammen)\n",
		float64(int64(rss1)-int64(rss0))/1024/n, float64(int64(heap1)-int64(heap0))/1024/n, float64(g1-g0)/n,
		len(more), mib(rss0), mib(rss1), mib(heap0), mib(heap1))
	for _, a := range more {
		a.c.Close()
	}
}

// checkStock is the proof: versions of all contested entries add up to the
// successful remember calls, and the last version's unique word finds its
// entry through recall.
func checkStock(t *testing.T, srv *server, projects []memory.ProjectRef, written int) {
	ctx := context.Background()
	total, checked := 0, 0
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	for pi, ref := range projects {
		// A session of its own with the project's read key, as an agent
		// that joins after the load would see it.
		reader, _, err := connect(ctx, hc, srv.url, srv.checkers[pi], -1-pi)
		if err != nil {
			t.Fatalf("%s: verbinden zur Prüfung: %v", ref, err)
		}
		defer reader.c.Close()
		for s := range *lastSlugs {
			slug := contestedSlug(s)
			sc, err := reader.call(ctx, "get", map[string]any{"slug": slug})
			if err != nil {
				if strings.Contains(err.Error(), "not_found") {
					continue // never written
				}
				t.Fatalf("%s %s: %v", ref, slug, err)
			}
			var latest struct {
				LatestVersion int    `json:"latest_version"`
				Content       string `json:"content"`
			}
			decode(t, sc, &latest)
			total += latest.LatestVersion
			word, _, _ := strings.Cut(latest.Content, ":")
			hits, err := reader.call(ctx, "recall", map[string]any{"query": word, "limit": 50})
			if err != nil {
				t.Fatalf("%s recall %s: %v", ref, word, err)
			}
			var found struct {
				Hits []struct {
					Slug string `json:"slug"`
				} `json:"hits"`
			}
			decode(t, hits, &found)
			if !slices.ContainsFunc(found.Hits, func(h struct {
				Slug string `json:"slug"`
			}) bool {
				return h.Slug == slug
			}) {
				t.Errorf("%s: das Wort %q der letzten Fassung v%d findet %s nicht (Treffer %v)", ref, word, latest.LatestVersion, slug, found.Hits)
			}
			checked++
		}
	}
	if total != written {
		t.Errorf("Summe der Fassungen %d ≠ erfolgreiche remember-Aufrufe %d", total, written)
		return
	}
	if !t.Failed() {
		fmt.Printf("Bestand geprüft: %d Fassungen, Suchindex aktuell (%d umkämpfte Einträge)\n", total, checked)
	}
}

// measureColdStart restarts the server on the same data directory and times
// the first recall answer (the project index is built on first use).
func measureColdStart(t *testing.T, srv *server, token string) {
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
	fmt.Printf("Kaltstart: %s vom Öffnen bis zur ersten recall-Antwort (Öffnen %s, erstes recall mit Indexaufbau über %d Einträge %s, zweites recall %s)\n",
		ms(total), ms(opened), *lastEintraege+*lastSlugs, ms(first), ms(second))
}

// compareSearchLog runs setup 1 again, alternating the search log off and
// on (each run on a fresh server), and prints what the log costs remember:
// medians of the runs, with the first run of the setup counted as "on".
func compareSearchLog(t *testing.T, a aufbau, first result) {
	on, off := []result{first}, []result(nil)
	for range 3 {
		off = append(off, runSetup(t, a, *lastAgenten, lauf{searchLogOff: true, quiet: true}))
		on = append(on, runSetup(t, a, *lastAgenten, lauf{quiet: true}))
	}
	rates := func(rs []result) (med float64, all []string, cpu float64) {
		var v, c []float64
		for _, r := range rs {
			v = append(v, r.rememberRate())
			c = append(c, r.cpuPerCall())
			all = append(all, fmt.Sprintf("%.0f", r.rememberRate()))
		}
		return median(v), all, median(c)
	}
	onRate, onAll, onCPU := rates(on)
	offRate, offAll, offCPU := rates(off)
	fmt.Printf("Suchprotokoll: remember mit %.0f/s (Median aus %s), ohne %.0f/s (Median aus %s): Kosten %.1f %% des remember-Durchsatzes; CPU je Aufruf %.0f µs mit, %.0f µs ohne\n",
		onRate, strings.Join(onAll, ", "), offRate, strings.Join(offAll, ", "), 100*(1-onRate/offRate), onCPU, offCPU)
}

// sweep is the stepped closed loop: one project, growing agent counts, each
// step for -last.dauer.
func sweep(t *testing.T) {
	var steps []int
	for _, s := range strings.Split(*lastStufen, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("last.stufen: %q ist keine Agentenzahl", s)
		}
		steps = append(steps, n)
	}
	most := slices.Max(steps)
	a := aufbauten(1)[0]
	srv := startServer(t, t.TempDir(), *lastSuchprotokoll == "aus")
	defer srv.stop()
	tokens := srv.seed(a.projects, most)
	hc := transportFor(most)
	defer hc.CloseIdleConnections()
	agents, _ := connectAll(t, hc, srv.url, tokens, 0)
	defer func() {
		for _, ag := range agents {
			ag.c.Close()
		}
	}()
	fmt.Printf("\n=== Stufen: ein Projekt, je Stufe %s, %d %% remember\n", *lastDauer, *lastSchreibanteil)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Agenten\tAufrufe je s\tremember je s\tp50\tp95\tp99\tFehler\t429\t5xx\t")
	written := 0
	var rates []float64
	var serverErrors int64
	for _, n := range steps {
		rejectedBefore, fiveBefore := statusCounts.rejected.Load(), statusCounts.serverError.Load()
		res := drive(agents[:n], *lastDauer)
		rejected, five := statusCounts.rejected.Load()-rejectedBefore, statusCounts.serverError.Load()-fiveBefore
		serverErrors += five
		written += res.written
		var all []time.Duration
		for _, tool := range tools[1:] {
			all = append(all, res.lat[tool]...)
		}
		slices.Sort(all)
		rate := float64(len(all)) / res.dur.Seconds()
		rates = append(rates, rate)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%s\t%s\t%s\t%d\t%d\t%d\t\n", n, rate, res.rememberRate(),
			ms(pct(all, 50)), ms(pct(all, 95)), ms(pct(all, 99)), sum(res.errs), rejected, five)
		if failed := sum(res.errs); failed > 0 {
			t.Errorf("Stufe %d: %d Aufrufe fehlgeschlagen, z. B. %s", n, failed, res.firstErr)
		}
	}
	tw.Flush()
	overloadCheck(t, steps, rates, serverErrors)
	checkStock(t, srv, a.projects, written)
}
