//go:build last

// The curve's mixed calls: the load test's one project and agents (30 %
// remember, recall:get 2:1, the search mix) against munin serve as its own
// process. Part misch runs -last.agenten agents for -last.kurve.dauer on a
// fresh server per round, with -last.vergleich alternating the older binary
// and this one (old, new, old, new …) and printing the paired ratios new/old
// per round and their median; part agenten runs growing agent counts on one
// server. The server's CPU per call is its /proc time over the calls.

package lasttest

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// mischServer is munin serve on a copy of the seeded project, its agents
// connected and the search mix checked (which also opened the index).
type mischServer struct {
	p      *serveProc
	hc     *http.Client
	agents []*agent
}

func startMisch(t testing.TB, bin, seed string, proj *saatProjekt, n int) *mischServer {
	dir := t.TempDir()
	copyDir(t, seed, dir)
	m := &mischServer{p: kurveServe(t, bin, dir), hc: transportFor(n)}
	m.agents, _ = connectAll(t, m.hc, m.p.url, proj.tokens[:n], 0)
	for _, ag := range m.agents {
		ag.assign(aufbauten(1)[0])
	}
	checkMix(t, &server{t: t, url: m.p.url, checkers: []string{proj.checker}}, true)
	return m
}

func (m *mischServer) close() {
	for _, ag := range m.agents {
		ag.c.Close()
	}
	m.hc.CloseIdleConnections()
	m.p.stop()
}

// mischPunkt is one load phase: what the agents measured and the CPU time
// of the server and of this process (the agents) during it.
type mischPunkt struct {
	agenten        int
	res            result
	server, agents time.Duration
}

// messen drives the first n agents for d; a failed call fails the test.
func (m *mischServer) messen(t testing.TB, n int, d time.Duration) mischPunkt {
	s0, a0 := m.p.cpu(), cpuTime()
	res := drive(m.agents[:n], d)
	pt := mischPunkt{agenten: n, res: res, server: m.p.cpu() - s0, agents: cpuTime() - a0}
	if failed := sum(res.errs); failed > 0 {
		t.Errorf("%d Agenten: %d Aufrufe fehlgeschlagen, z. B. %s", n, failed, res.firstErr)
	}
	if res.calls() == 0 {
		t.Errorf("%d Agenten: kein Aufruf in %s", n, d)
	}
	return pt
}

func (pt mischPunkt) perCall(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(max(pt.res.calls(), 1))
}

func (pt mischPunkt) rate() float64 { return float64(pt.res.calls()) / pt.res.dur.Seconds() }

// row is the point's table cells after its first ones.
func (pt mischPunkt) row() string {
	var all []time.Duration
	for _, tool := range tools[1:] {
		all = append(all, pt.res.lat[tool]...)
	}
	slices.Sort(all)
	return fmt.Sprintf("%d\t%.0f\t%.0f\t%.0f\t%s\t%s\t%d\t", pt.res.calls(), pt.rate(), pt.perCall(pt.server), pt.perCall(pt.agents),
		ms(pct(all, 50)), ms(pct(all, 99)), sum(pt.res.errs))
}

const mischKopf = "Aufrufe\tje s\tServer-CPU µs je Aufruf\tAgenten-CPU µs je Aufruf\tp50\tp99\tFehler\t"

// mischSaat writes the seeded project with keys for n agents into a new
// directory, the template of every round's server.
func mischSaat(t testing.TB, n int) (string, *saatProjekt) {
	seed := t.TempDir()
	proj := mischProjekt(n)
	saen(t, seed, []*saatProjekt{proj})
	return seed, proj
}

// kurveMisch is part misch.
func kurveMisch(t *testing.T, bin string, p kurvenProfil) {
	sameSchemas(t, bin)
	seed, proj := mischSaat(t, *lastAgenten)
	bins, names := []string{bin}, []string{"neu"}
	if *lastVergleich != "" {
		sameSchemas(t, *lastVergleich)
		bins, names = []string{*lastVergleich, bin}, []string{"alt", "neu"}
	}
	fmt.Printf("\n=== misch: ein Projekt mit %d Einträgen, %d Agenten, %d %% remember, recall:get 2:1, Suchmix %d %%, %s je Lauf, %d Runden, je Lauf ein frischer Server\n",
		*lastEintraege, *lastAgenten, *lastSchreibanteil, *lastSuchmix, p.dauer, p.runden)
	if *lastVergleich != "" {
		fmt.Printf("alt: %s, neu: %s\n", *lastVergleich, bin)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Runde\tmunin\t"+mischKopf)
	runs := make([][]mischPunkt, len(bins))
	for r := range p.runden {
		for i, b := range bins {
			m := startMisch(t, b, seed, proj, *lastAgenten)
			pt := m.messen(t, *lastAgenten, p.dauer)
			m.close()
			runs[i] = append(runs[i], pt)
			fmt.Fprintf(tw, "%d\t%s\t%s\n", r+1, names[i], pt.row())
		}
	}
	tw.Flush()
	if len(bins) == 2 {
		printPaired(runs[0], runs[1])
	} else {
		var cpu []float64
		for _, pt := range runs[0] {
			cpu = append(cpu, pt.perCall(pt.server))
		}
		fmt.Printf("Server-CPU je Aufruf: Median %.0f µs aus %d Runden\n", median(cpu), len(cpu))
	}
}

// paired is the ratios new/old of each round: server CPU per call and
// calls per second.
func paired(old, neu []mischPunkt) (cpu, rate []float64) {
	for r := range min(len(old), len(neu)) {
		cpu = append(cpu, neu[r].perCall(neu[r].server)/old[r].perCall(old[r].server))
		rate = append(rate, neu[r].rate()/old[r].rate())
	}
	return cpu, rate
}

// printPaired prints the ratios new/old of each round and their medians.
func printPaired(old, neu []mischPunkt) {
	cpu, rate := paired(old, neu)
	list := func(v []float64) string {
		var s []string
		for _, x := range v {
			s = append(s, fmt.Sprintf("%.2f", x))
		}
		return strings.Join(s, ", ")
	}
	fmt.Printf("neu/alt je Runde: Server-CPU je Aufruf %s (Median %.2f), Aufrufe je s %s (Median %.2f)\n",
		list(cpu), median(cpu), list(rate), median(rate))
}

// kurveAgenten is part agenten: one server, each agent count of the
// profile for -last.kurve.dauer, the agents' sessions opened once.
func kurveAgenten(t *testing.T, bin string, p kurvenProfil) {
	most := slices.Max(p.agenten)
	seed, proj := mischSaat(t, most)
	m := startMisch(t, bin, seed, proj, most)
	defer m.close()
	fmt.Printf("\n=== agenten: ein Projekt mit %d Einträgen, der Mix von misch, ein Server, je Stufe %s\n", *lastEintraege, p.dauer)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Agenten\t"+mischKopf)
	for _, n := range p.agenten {
		fmt.Fprintf(tw, "%d\t%s\n", n, m.messen(t, n, p.dauer).row())
	}
	tw.Flush()
}
