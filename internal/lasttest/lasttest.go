//go:build last

// Package lasttest is the machinery of the load test (see LASTTEST.md); the
// entry point is TestLast in the top-level last_test.go:
// go test -tags last -run TestLast -v .
// It starts the real server in-process on a free port over a temp data
// directory and drives it over HTTP exactly as agents do: each agent has its
// own key (in setup 4 one key per project, all in one Authorization header)
// and its own MCP session. It fails if any call failed, if a version of any
// project was lost, or if the index missed an entry's last version.
// -last.abonnenten=N runs the first of setups 1–4 again in pairs with and
// without N subscribed MCP sessions (abonnenten.go), and fails if a write
// never reached one of them.
// -last.kaltstart=N runs only the cold start instead (kaltstart.go): the
// built binary as its own process on a project of N entries.
// -last.kurve=kurz|voll runs only the curve (kurve.go): munin serve as its
// own process, its CPU per call apart from the agents'.
//
// Every file carries the build tag last, so ordinary builds and go test ./...
// leave the package out; nothing but last_test.go imports it.
package lasttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/store"
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
	// multi: every agent holds a key for every project in one MCP block,
	// recalls across all of them and names the project of each get and
	// remember; otherwise agent i has one key, for project i mod N.
	multi bool
	// review: the project reviews its agents' writes, every other agent
	// holds a propose key, and a reviewer agent decides (pruefung.go).
	review bool
}

func aufbauten(n int) []aufbau {
	var zwei, drei []memory.ProjectRef
	for i := range n {
		zwei = append(zwei, memory.ProjectRef{Workspace: "bereich", Project: fmt.Sprintf("p%d", i)})
		drei = append(drei, memory.ProjectRef{Workspace: fmt.Sprintf("bereich-%d", i), Project: "p"})
	}
	return []aufbau{
		{name: "ein Projekt", projects: []memory.ProjectRef{{Workspace: "bereich", Project: "p"}}},
		{name: fmt.Sprintf("ein Arbeitsbereich mit %d Projekten", n), projects: zwei},
		{name: fmt.Sprintf("%d Arbeitsbereiche mit je einem Projekt", n), projects: drei},
		// The projects of setup 2, so that 2 and 4 differ only in the keys.
		{name: fmt.Sprintf("mehrere Projekte je Agent: %d Schlüssel in einem MCP-Block, ein Arbeitsbereich", n), projects: zwei, multi: true},
		{name: "ein Projekt mit Prüfung: Agenten schlagen vor, ein Prüfer gibt frei oder lehnt ab", projects: []memory.ProjectRef{{Workspace: "bereich", Project: "p"}}, review: true},
	}
}

// Run is the whole load test as the -last.* flags ask for it: the raw write
// baseline, the selected setups (each a subtest AufbauN) and the optional
// sweep (subtest Stufen); with -last.kaltstart only the cold start of a
// large project (kaltstart.go). It prints its tables to stdout.
func Run(t *testing.T) {
	if *lastKaltstart > 0 {
		kaltstart(t, *lastKaltstart)
		return
	}
	if *lastKurve != "" {
		kurve(t)
		return
	}
	if *lastAgenten < 1 || *lastProjekte < 1 || *lastSlugs < 1 || *lastEintraege < 1 ||
		*lastSchreibanteil < 0 || *lastSchreibanteil > 100 || *lastSuchmix < 0 || *lastSuchmix > 100 || *lastNeu < 0 || *lastNeu > 100 {
		t.Fatal("last.agenten, last.projekte, last.slugs, last.eintraege müssen ≥ 1 sein, last.schreibanteil, last.suchmix und last.neu 0..100")
	}
	mix = mixQueries(*lastEintraege)
	wanted := strings.Split(*lastAufbauten, ",")
	if slices.Contains(wanted, "4") && *lastProjekte > memory.MaxCallerKeys {
		t.Fatalf("last.projekte %d: in Aufbau 4 hält ein Agent einen Schlüssel je Projekt, höchstens %d in einem MCP-Block", *lastProjekte, memory.MaxCallerKeys)
	}
	// The server runs in this process, so it gets the collector setting
	// main gives it (agents share it; they are part of the measurement).
	gogc := app.TuneGC()
	checkProtocol(t)
	fmt.Printf("Lasttest %s: %d Agenten, %s je Aufbau, %d %% remember, %d Einträge und %d umkämpfte Slugs je Projekt, MCP %s, GOMAXPROCS %d, GOGC %d\n",
		time.Now().Format("2006-01-02 15:04"), *lastAgenten, *lastDauer, *lastSchreibanteil, *lastEintraege, *lastSlugs, protocolVersion(), runtime.GOMAXPROCS(0), gogc)

	fmt.Printf("Dubletten-Hinweis (similar): aus=%v\n", *lastAehnlichAus)
	raw := rawBaseline(t)
	var first *result // setup 1's, for setup 5's comparison
	compared := false // the subscribers' comparison ran (in the first of setups 1–4)
	fmt.Printf("Rohschreiben (eine Fassungszeile je Transaktion, eine Verbindung, synchronous=%s): %.0f Zeilen/s\n", syncName(), raw)

	for i, a := range aufbauten(*lastProjekte) {
		if !slices.Contains(wanted, strconv.Itoa(i+1)) {
			continue
		}
		t.Run(fmt.Sprintf("Aufbau%d", i+1), func(t *testing.T) {
			fmt.Printf("\n=== Aufbau %d: %s, %d Agenten, %s\n", i+1, a.name, *lastAgenten, *lastDauer)
			logOff := *lastSuchprotokoll == "aus"
			res := runSetup(t, a, *lastAgenten, lauf{searchLogOff: logOff, profile: i == 0 && *lastProfil != "" && *lastAbonnenten == 0, coldStart: i == 0})
			if i == 0 {
				first = &res
			}
			if a.review && first != nil {
				compareReview(*first, res)
			}
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
			if *lastAbonnenten > 0 && i < 4 && !compared {
				compared = true
				compareAbonnenten(t, a)
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
func rawBaseline(t testing.TB) float64 {
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

// lauf says how runSetup runs a setup.
type lauf struct {
	searchLogOff bool // server flag: no search log
	profile      bool // CPU profile of the load phase into -last.profil
	coldStart    bool // restart afterwards and time the first recall
	quiet        bool // no table (repeated runs of a comparison)
	abonnenten   int  // subscribed sessions during the load (abonnenten.go)
}

// runSetup runs one setup on a fresh server: seed, connect (memory per
// session), load, check; optionally the cold start.
func runSetup(t testing.TB, a aufbau, n int, l lauf) result {
	dir := t.TempDir()
	srv := startServer(t, dir, l.searchLogOff)
	if a.review {
		srv.roleOf = reviewRole
	}
	tokens := srv.seed(a.projects, n, a.multi)
	hc := transportFor(n)

	agents, connWall := connectAll(t, hc, srv.url, tokens, 0)
	for _, ag := range agents {
		ag.assign(a)
	}
	var rev *pruefer
	if a.review {
		rev = startReview(t, srv, a, hc, agents)
	}
	checkMix(t, srv, l.quiet)
	var ab *abos
	if l.abonnenten > 0 {
		ab = connectAbos(t, srv, a, l.abonnenten)
		ab.mark(t, srv)
	}

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
	var reviewed chan struct{}
	if rev != nil {
		reviewed = make(chan struct{})
		go func() {
			defer close(reviewed)
			rev.run(time.Now().Add(*lastDauer))
		}()
	}
	res := drive(agents, *lastDauer)
	if rev != nil {
		<-reviewed
		res.addReviewer(rev.ag)
	}
	res.cpu = cpuTime() - cpu0
	if l.profile {
		pprof.StopCPUProfile()
	}
	if ab != nil {
		feed := ab.feed(t, srv)
		heard := ab.evaluate(feed, res.acks, ab.settle(feed, 10*time.Second))
		ab.close()
		heard.check(t)
		res.abo = &heard
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
	if rev != nil {
		// Every version there is an approval: the stock is what was approved.
		res.written = checkReview(t, srv, rev)
	}
	checkStock(t, srv, a, res.written)
	if !l.quiet {
		memoryPerSession(t, srv.url, tokens)
		if a.multi {
			compareRecallScope(t, srv, a)
		}
	}
	for _, ag := range agents {
		ag.c.Close()
	}
	if rev != nil {
		rev.ag.c.Close()
	}
	hc.CloseIdleConnections()
	if l.coldStart {
		measureColdStart(t, srv, tokens[0])
	}
	srv.stop()
	return res
}

// compareSearchLog runs setup 1 again, alternating the search log off and
// on (each run on a fresh server), and prints what the log costs remember:
// medians of the runs, with the first run of the setup counted as "on".
func compareSearchLog(t testing.TB, a aufbau, first result) {
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
