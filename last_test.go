//go:build last

// The load test: go test -tags last -run TestLast -v . (see LASTTEST.md).
// It starts the real server in-process on a free port over a temp data
// directory and drives it over HTTP exactly as agents do: each agent has its
// own key and its own MCP session. It fails if any call failed, if a version
// was lost, or if the index missed an entry's last version.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

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
			res := runSetup(t, a, *lastAgenten, logOff, i == 0 && *lastProfil != "", i == 0)
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
}

func startServer(t *testing.T, dir string, searchLogOff bool) *server {
	t.Helper()
	s := &server{t: t, dir: dir, cfg: app.Config{
		DataDir:      dir,
		Addr:         "127.0.0.1:0",
		BudgetOff:    true,
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

// seed creates the projects, pre-seeds entries and makes one key per agent;
// agent i works in project i mod len(projects).
func (s *server) seed(projects []memory.ProjectRef, agents int) []string {
	t := s.t
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(projects))
	for _, ref := range projects {
		_, key, err := s.app.Svc.CreateKey(ctx, ref, "saat", memory.RoleWrite)
		if err != nil {
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

func seededSlug(i int) string    { return fmt.Sprintf("wissen/eintrag-%04d", i) }
func contestedSlug(i int) string { return fmt.Sprintf("gemeinsam-%02d", i) }

// rememberContent is a contested write: its unique word first, so that the
// check can find it again in the entry's last version.
func rememberContent(agent, n int, word string) string {
	return fmt.Sprintf("%s: Stand von agent-%03d, Schritt %d\n\nDas Team hält fest, was es zu %s und %s entschieden hat.",
		word, agent, n, terms[agent%len(terms)], terms[n%len(terms)])
}

// uniqueWord is a word no other write uses: letters only, so every analyzer
// keeps it as one token.
func uniqueWord(agent, n int) string {
	const letters = "bcdfghjklmnpqrstvwxz"
	var b strings.Builder
	b.WriteString("qy")
	for _, v := range []int{agent, n} {
		for {
			b.WriteByte(letters[v%len(letters)])
			v /= len(letters)
			if v == 0 {
				break
			}
		}
		b.WriteByte('y')
	}
	return b.String()
}

// transportFor is the one HTTP transport all agents share; it keeps an idle
// connection per agent (Go's default of two per host would open and close a
// connection per call and run the machine out of local ports).
func transportFor(agents int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: agents + 8,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// agent is one MCP session with its own key.
type agent struct {
	id  int
	c   *client.Client
	lat map[string][]time.Duration
	err map[string]int
	// firstErr keeps one error text for the report.
	firstErr string
}

func connect(ctx context.Context, hc *http.Client, url, token string, id int) (*agent, time.Duration, error) {
	start := time.Now()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, 0, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, 0, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: fmt.Sprintf("lasttest-%03d", id), Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, 0, err
	}
	return &agent{id: id, c: c, lat: map[string][]time.Duration{}, err: map[string]int{}}, time.Since(start), nil
}

// connectAll opens one session per token concurrently and records the
// session setup as the tool "verbinden".
func connectAll(t *testing.T, hc *http.Client, url string, tokens []string, firstID int) ([]*agent, time.Duration) {
	agents := make([]*agent, len(tokens))
	lat := make([]time.Duration, len(tokens))
	var wg sync.WaitGroup
	errs := make(chan error, len(tokens))
	start := time.Now()
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, d, err := connect(context.Background(), hc, url, tok, firstID+i)
			if err != nil {
				errs <- fmt.Errorf("agent %d: verbinden: %w", firstID+i, err)
				return
			}
			agents[i], lat[i] = a, d
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	agents[0].lat["verbinden"] = lat
	return agents, wall
}

// call runs one tool and returns its structured content; a tool error is an error.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) (any, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	start := time.Now()
	res, err := a.c.CallTool(ctx, req)
	a.lat[tool] = append(a.lat[tool], time.Since(start))
	if err == nil && res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				text = tc.Text
			}
		}
		err = fmt.Errorf("tool error: %s", text)
	}
	if err != nil {
		a.err[tool]++
		if a.firstErr == "" {
			a.firstErr = fmt.Sprintf("%s: %v", tool, err)
		}
		return nil, err
	}
	return res.StructuredContent, nil
}

// work is one agent's closed loop until the deadline. It returns the number
// of successful remember calls.
func (a *agent) work(deadline time.Time) int {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(a.id), uint64(time.Now().UnixNano())))
	written, n := 0, 0
	for time.Now().Before(deadline) {
		n++
		switch r := rng.IntN(300); {
		case r < 3**lastSchreibanteil:
			word := uniqueWord(a.id, n)
			args := map[string]any{"slug": contestedSlug(rng.IntN(*lastSlugs)), "content": rememberContent(a.id, n, word)}
			if _, err := a.call(ctx, "remember", args); err == nil {
				written++
			}
		case (r-3**lastSchreibanteil)%3 < 2:
			a.call(ctx, "recall", map[string]any{"query": terms[rng.IntN(len(terms))]})
		default:
			a.call(ctx, "get", map[string]any{"slug": seededSlug(rng.IntN(*lastEintraege))})
		}
	}
	return written
}

// result is one load phase: latencies and errors per tool, successful writes.
type result struct {
	dur      time.Duration
	lat      map[string][]time.Duration
	errs     map[string]int
	firstErr string
	written  int
	connWall time.Duration
	cpu      time.Duration
}

func (r result) rememberRate() float64 { return float64(len(r.lat["remember"])) / r.dur.Seconds() }

// calls counts the tool calls of the load phase (session setup excluded).
func (r result) calls() int {
	n := 0
	for _, tool := range tools[1:] {
		n += len(r.lat[tool])
	}
	return n
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drive runs every agent's loop for d and merges what they measured.
func drive(agents []*agent, d time.Duration) result {
	for _, a := range agents {
		for _, tool := range tools[1:] {
			a.lat[tool] = a.lat[tool][:0]
		}
		clear(a.err)
	}
	var written atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			written.Add(int64(a.work(deadline)))
		}()
	}
	wg.Wait()
	res := result{dur: time.Since(start), lat: map[string][]time.Duration{}, errs: map[string]int{}, written: int(written.Load())}
	for _, a := range agents {
		for tool, l := range a.lat {
			res.lat[tool] = append(res.lat[tool], l...)
		}
		for tool, n := range a.err {
			res.errs[tool] += n
		}
		if res.firstErr == "" {
			res.firstErr = a.firstErr
		}
	}
	return res
}

// runSetup runs one setup on a fresh server: seed, connect (memory per
// session), load, check; for the first setup also the cold start.
func runSetup(t *testing.T, a aufbau, n int, searchLogOff, profile, coldStart bool) result {
	dir := t.TempDir()
	srv := startServer(t, dir, searchLogOff)
	tokens := srv.seed(a.projects, n)
	hc := transportFor(n)

	rssBefore, heapBefore := memoryNow()
	agents, connWall := connectAll(t, hc, srv.url, tokens, 0)
	rssAfter, heapAfter := memoryNow()

	if profile {
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
	if profile {
		pprof.StopCPUProfile()
	}
	res.connWall = connWall
	res.lat["verbinden"] = agents[0].lat["verbinden"]
	printTable(res)
	fmt.Printf("Speicher: RSS %.1f → %.1f MiB, Heap %.1f → %.1f MiB beim Verbinden von %d Sitzungen: %.0f KiB RSS bzw. %.0f KiB Heap je Sitzung (Server und Client im selben Prozess)\n",
		mib(rssBefore), mib(rssAfter), mib(heapBefore), mib(heapAfter), n,
		float64(int64(rssAfter)-int64(rssBefore))/1024/float64(n), float64(int64(heapAfter)-int64(heapBefore))/1024/float64(n))
	fmt.Printf("Gruppen-Commit: %s\n", batchStats(srv.app))
	fmt.Printf("CPU: %.0f µs je Aufruf (Server und Agenten zusammen), %.2f Kerne ausgelastet\n",
		float64(res.cpu.Microseconds())/float64(res.calls()), res.cpu.Seconds()/res.dur.Seconds())

	if failed := sum(res.errs); failed > 0 {
		t.Errorf("%d Aufrufe fehlgeschlagen, z. B. %s", failed, res.firstErr)
	}
	checkStock(t, srv, agents, a.projects, res.written)
	for _, ag := range agents {
		ag.c.Close()
	}
	hc.CloseIdleConnections()
	if coldStart {
		measureColdStart(t, srv, tokens[0])
	}
	srv.stop()
	return res
}

func batchStats(a *app.App) string {
	st := a.Store.Stats()
	ix := a.Index.Stats()
	per := func(x, y int64) float64 {
		if y == 0 {
			return 0
		}
		return float64(x) / float64(y)
	}
	return fmt.Sprintf("%d Schreibvorgänge in %d Transaktionen (%.1f je Transaktion); Index: %d Refreshes in %d Batches (%.1f je Batch), %d Verdichtungen",
		st.Writes, st.Batches, per(st.Writes, st.Batches), ix.Refreshes, ix.Batches, per(ix.Refreshes, ix.Batches), ix.Compactions)
}

// checkStock is the proof: versions of all contested entries add up to the
// successful remember calls, and the last version's unique word finds its
// entry through recall.
func checkStock(t *testing.T, srv *server, agents []*agent, projects []memory.ProjectRef, written int) {
	ctx := context.Background()
	total, checked := 0, 0
	for pi, ref := range projects {
		// Agent pi works in project pi (round robin), so it can read there.
		reader := agents[pi%len(agents)]
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

func decode(t *testing.T, v, out any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
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

// compareSearchLog runs setup 1 again with the search log off and on (in
// that order, each on a fresh server) and prints what the log costs remember.
func compareSearchLog(t *testing.T, a aufbau, first result) {
	off := runSetup(t, a, *lastAgenten, true, false, false)
	on := runSetup(t, a, *lastAgenten, false, false, false)
	onRate := (first.rememberRate() + on.rememberRate()) / 2
	fmt.Printf("Suchprotokoll: remember mit %.0f/s (Läufe %.0f, %.0f), ohne %.0f/s: Kosten %.1f %%\n",
		onRate, first.rememberRate(), on.rememberRate(), off.rememberRate(), 100*(1-onRate/off.rememberRate()))
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
	fmt.Fprintln(tw, "Agenten\tAufrufe je s\tremember je s\tp50\tp95\tp99\tFehler\t")
	written := 0
	for _, n := range steps {
		res := drive(agents[:n], *lastDauer)
		written += res.written
		var all []time.Duration
		for _, tool := range tools[1:] {
			all = append(all, res.lat[tool]...)
		}
		slices.Sort(all)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%s\t%s\t%s\t%d\t\n", n, float64(len(all))/res.dur.Seconds(), res.rememberRate(),
			ms(pct(all, 50)), ms(pct(all, 95)), ms(pct(all, 99)), sum(res.errs))
		if failed := sum(res.errs); failed > 0 {
			t.Errorf("Stufe %d: %d Aufrufe fehlgeschlagen, z. B. %s", n, failed, res.firstErr)
		}
	}
	tw.Flush()
	checkStock(t, srv, agents, a.projects, written)
}

func printTable(r result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Werkzeug\tAufrufe\tje s\tp50\tp95\tp99\tmax\tFehler\t")
	for _, tool := range tools {
		l := slices.Clone(r.lat[tool])
		slices.Sort(l)
		d := r.dur
		if tool == "verbinden" {
			d = r.connWall
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t\n", tool, len(l), float64(len(l))/d.Seconds(),
			ms(pct(l, 50)), ms(pct(l, 95)), ms(pct(l, 99)), ms(pct(l, 100)), r.errs[tool])
	}
	tw.Flush()
}

// pct is the p-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// memoryNow returns the process's resident set (VmRSS) and the Go heap in
// use, after a GC, in bytes.
func memoryNow() (rss, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb * 1024
			}
		}
	}
	return rss, ms.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
