//go:build last

// The curve (-last.kurve=kurz|voll): munin serve as its own process on
// 127.0.0.1, driven from this process over MCP, its CPU read from /proc, so
// that the server's CPU per call stands apart from the agents'. Four parts
// (-last.kurve.teile): misch, the load test's mix with -last.agenten agents
// (with -last.vergleich A/B against an older binary, paired ratios per
// round; kurve_misch.go); groessen, one client's recall of frequent and rare
// words in one project of each size, reindex time and peak RSS
// (kurve_groessen.go); projekte, many small projects in one and in several
// workspaces, RSS idle and after each was recalled once, index bytes per
// entry (kurve_projekte.go); agenten, calls/s and server CPU per call by
// agent count. The short profile (kurz) runs in CI and judges correctness
// only: every call answered, every expected hit found. Times are printed,
// never judged.

package lasttest

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// kurvenProfil is what one run of the curve measures.
type kurvenProfil struct {
	teile              []string
	groessen, agenten  []int
	projekte, bereiche int
	dauer              time.Duration
	runden             int
}

// kurvenprofil is the profile -last.kurve names, each flag that is set
// taking the place of the profile's value.
func kurvenprofil(t testing.TB) kurvenProfil {
	var p kurvenProfil
	switch *lastKurve {
	case "kurz":
		p = kurvenProfil{groessen: []int{1000, 10000}, agenten: []int{1, 8}, projekte: 20, bereiche: 5, dauer: 2 * time.Second, runden: 1}
	case "voll":
		p = kurvenProfil{groessen: []int{1000, 10000, 100000, 1000000}, agenten: []int{1, 8, 32, 128}, projekte: 1000, bereiche: 100, dauer: 10 * time.Second, runden: 5}
	default:
		t.Fatalf("last.kurve %q: kurz oder voll", *lastKurve)
	}
	p.teile = strings.Split(*lastKurveTeile, ",")
	for _, teil := range p.teile {
		if !slices.Contains([]string{"misch", "groessen", "projekte", "agenten"}, teil) {
			t.Fatalf("last.kurve.teile: %q ist kein Teil (misch, groessen, projekte, agenten)", teil)
		}
	}
	if *lastKurveGroessen != "" {
		p.groessen = zahlen(t, "last.kurve.groessen", *lastKurveGroessen, 1000)
	}
	if *lastKurveAgenten != "" {
		p.agenten = zahlen(t, "last.kurve.agenten", *lastKurveAgenten, 1)
	}
	if *lastKurveProjekte > 0 {
		p.projekte = *lastKurveProjekte
	}
	if *lastKurveBereiche > 0 {
		p.bereiche = *lastKurveBereiche
	}
	p.bereiche = min(p.bereiche, p.projekte)
	if *lastKurveDauer > 0 {
		p.dauer = *lastKurveDauer
	}
	if *lastKurveRunden > 0 {
		p.runden = *lastKurveRunden
	}
	if *lastAgenten < 1 || *lastEintraege < 1 || *lastSlugs < 1 || *lastSchreibanteil < 0 || *lastSchreibanteil > 100 ||
		*lastSuchmix < 0 || *lastSuchmix > 100 || *lastNeu < 0 || *lastNeu > 100 {
		t.Fatal("last.agenten, last.eintraege, last.slugs müssen ≥ 1 sein, last.schreibanteil, last.suchmix und last.neu 0..100")
	}
	return p
}

// zahlen reads a comma-separated list of numbers, each at least least.
func zahlen(t testing.TB, name, list string, least int) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < least {
			t.Fatalf("%s: %q ist keine Zahl ≥ %d", name, s, least)
		}
		out = append(out, n)
	}
	return out
}

// kurve runs the curve's parts, each a subtest, on the built munin (or
// -last.munin).
func kurve(t *testing.T) {
	p := kurvenprofil(t)
	checkProtocol(t)
	mix = mixQueries(*lastEintraege)
	// The load test's server runs recalls without a bound per key or
	// project (a closed loop of agents in one project would queue); munin
	// serve reads the same setting from its environment.
	t.Setenv("MUNIN_RECALL_CONCURRENCY", "-1")
	bin := buildMunin(t)
	watchdog(t)
	which := "frisch gebaut"
	if *lastMunin != "" {
		which = *lastMunin
	}
	fmt.Printf("Messkurve (%s) %s: munin (%s) als eigener Prozess auf 127.0.0.1, Agenten in diesem Prozess über MCP %s; %s, %d Kerne, GOMAXPROCS des Tests %d; Last vorher %s\n",
		*lastKurve, time.Now().Format("2006-01-02 15:04"), which, protocolVersion(), cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage())
	parts := map[string]func(*testing.T){
		"misch":    func(t *testing.T) { kurveMisch(t, bin, p) },
		"groessen": func(t *testing.T) { kurveGroessen(t, bin, p) },
		"projekte": func(t *testing.T) { kurveProjekte(t, bin, p) },
		"agenten":  func(t *testing.T) { kurveAgenten(t, bin, p) },
	}
	for _, teil := range p.teile {
		t.Run(teil, parts[teil])
		fmt.Printf("Last nach %s: %s\n", teil, loadAverage())
	}
}

// served are the servers the curve started and has not seen end.
var served struct {
	sync.Mutex
	procs map[*serveProc]bool
}

// kurveServe is startServe for the watchdog.
func kurveServe(t testing.TB, bin, dir string) *serveProc {
	p := startServe(t, bin, dir)
	served.Lock()
	defer served.Unlock()
	if served.procs == nil {
		served.procs = map[*serveProc]bool{}
	}
	served.procs[p] = true
	go func() {
		<-p.done
		served.Lock()
		defer served.Unlock()
		delete(served.procs, p)
	}()
	return p
}

// watchdog kills the curve's servers half a minute before go test's
// -timeout: that ends the test binary without running its cleanups and
// would leave them running. Killed, they fail the calls waiting on them,
// and the test ends on its own with their errors.
func watchdog(t *testing.T) {
	deadline, ok := t.Deadline()
	if !ok {
		return
	}
	timer := time.AfterFunc(time.Until(deadline)-30*time.Second, func() {
		served.Lock()
		defer served.Unlock()
		for p := range served.procs {
			p.cmd.Process.Kill()
		}
	})
	t.Cleanup(func() { timer.Stop() })
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unbekannt"
}

// cpuModel is the first processor's model name from /proc/cpuinfo.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
