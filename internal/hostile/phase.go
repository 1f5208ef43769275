//go:build hostile

// One phase: the chosen attacks run for -feind.dauer while the victim
// recalls one query after another and a sampler reads the server's heap.

package hostile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"
)

// env is the running setup every phase shares.
type env struct {
	t          *testing.T
	srv        *child
	data       string
	atk        attackSpec // without the attacks (Nrs) of a phase
	vic        *victim
	vicTally   *tally
	metricsKey string
	metrics    *http.Client
	metTally   *tally
	probeKey   string // a read key of the victim's project for the session probe
}

// phaseResult is what one phase measured.
type phaseResult struct {
	name    string
	nrs     []int
	lat     latencies
	heapMax int64 // the live heap's maximum (the check)
	inuse   int64 // heap in use, garbage included (shown)
	rssMax  int64
	loadMax float64 // the machine's highest one-minute load average (0: unknown)
	heapErr string  // the first failed /metrics read
	heapOK  int64   // successful /metrics reads
	braked  bool    // the RSS passed -feind.notbremse
	tallies []*tally
	growth  int64         // growth of the attacker's workspace file (bytes)
	sizeErr error         // the file's size could not be read
	dur     time.Duration // how long the victim was measured
	atkDur  time.Duration // how long the attacker process ran
	atkCPU  time.Duration // the CPU time it used
	srvCPU  time.Duration // the server's CPU time in the phase
	srvWall time.Duration // the wall time srvCPU was taken over
	atkErr  error         // the attacker process failed
	vic429  int           // 429s the victim's recalls got (each waited out)
	probe   *tally        // the victim project's session probe
}

// sampler reads the heap and the RSS every 250 ms until stop is closed.
type sampler struct {
	heapMax, inuse, rssMax, ok atomic.Int64
	load100                    atomic.Int64 // the load average's maximum × 100
	braked                     atomic.Bool
	mu                         sync.Mutex
	firstErr                   string
	done                       chan struct{}
}

func startSampler(e *env, stop <-chan struct{}, brake context.CancelFunc) *sampler {
	s := &sampler{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if h, err := heapSample(context.Background(), e.metrics, e.srv.base, e.metricsKey); err != nil {
				s.mu.Lock()
				if s.firstErr == "" {
					s.firstErr = err.Error()
				}
				s.mu.Unlock()
			} else {
				s.ok.Add(1)
				storeMax(&s.heapMax, h.live)
				storeMax(&s.inuse, h.inuse)
			}
			r := e.srv.rss()
			storeMax(&s.rssMax, r)
			storeMax(&s.load100, int64(loadAverage()*100))
			if r > *feindNotbremse {
				s.braked.Store(true)
				brake()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// runPhase runs attacks nrs in the attacker process while the victim
// recalls; without attacks it measures quietN recalls, or with quietN 0 as
// long as an attack phase (a quiet phase among the attacks). An attack
// phase lasts -feind.dauer and at least until the victim has -feind.proben
// recalls, but no longer than -feind.hoechstdauer.
func runPhase(e *env, name string, nrs []int, quietN int) phaseResult {
	res := phaseResult{name: name, nrs: nrs}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	smp := startSampler(e, stop, cancel)
	probe, probeDone := startSessionProbe(e, stop)
	vic429 := tooMany(e.vicTally)
	size0, err0 := pageBytes(e.data, "feind")

	var atk *attackProc
	cpu0 := e.srv.cpu()
	atkStart := time.Now()
	if len(nrs) > 0 {
		spec := e.atk
		spec.Nrs = nrs
		var err error
		if atk, err = startAttacker(e.t, ctx, spec); err != nil {
			res.atkErr = err
		}
	}

	// The victim recalls at most once per -feind.takt, as an agent does.
	paced := func() {
		start := time.Now()
		res.lat.add(e.vic.recall(context.Background()))
		time.Sleep(*feindTakt - time.Since(start))
	}
	start := time.Now()
	switch {
	case quietN > 0:
		for range quietN {
			paced()
		}
	case len(nrs) == 0 || atk != nil:
		// The attacks get a moment to reach full strength first.
		if atk != nil {
			select {
			case <-time.After(min(*feindDauer/10, 500*time.Millisecond)):
			case <-ctx.Done():
			}
		}
		start = time.Now()
		for ctx.Err() == nil {
			since := time.Since(start)
			if since >= *feindHoechstdauer || (since >= *feindDauer && len(res.lat.d)+res.lat.errs >= *feindProben) {
				break
			}
			paced()
		}
	}
	res.dur = time.Since(start)
	res.vic429 = tooMany(e.vicTally) - vic429
	res.srvCPU, res.srvWall = e.srv.cpu()-cpu0, time.Since(atkStart)
	if atk != nil {
		res.tallies, res.atkErr = atk.finish()
		res.atkDur, res.atkCPU = time.Since(atkStart), atk.cpu()
	}
	cancel()
	// The search log is flushed every 200 ms: wait for the last rows.
	time.Sleep(500 * time.Millisecond)
	size1, err1 := pageBytes(e.data, "feind")
	res.growth, res.sizeErr = size1-size0, errors.Join(err0, err1)
	close(stop)
	<-smp.done
	<-probeDone
	res.probe = probe
	res.heapMax, res.inuse, res.rssMax = smp.heapMax.Load(), smp.inuse.Load(), smp.rssMax.Load()
	res.braked, res.heapErr, res.heapOK = smp.braked.Load(), smp.firstErr, smp.ok.Load()
	res.loadMax = float64(smp.load100.Load()) / 100
	return res
}

// settle waits until the server is idle again (under a quarter of a core
// over half a second), at most 20 s, so that the next phase is not charged
// with work an attack left behind: a page whose client has gone is still
// rendered to its end. It says how long that took when it was more than
// the first half second.
func settle(e *env) {
	start := time.Now()
	for time.Since(start) < 20*time.Second && !e.srv.gone() {
		cpu0, t0 := e.srv.cpu(), time.Now()
		time.Sleep(500 * time.Millisecond)
		if (e.srv.cpu() - cpu0).Seconds() < 0.25*time.Since(t0).Seconds() {
			break
		}
	}
	if d := time.Since(start); d > time.Second {
		fmt.Printf("    Server erst nach %.1f s wieder ruhig (unter 0,25 Kernen)\n", d.Seconds())
	}
}

// loadAverage is the machine's one-minute load average from /proc (0 where
// there is none).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// storeMax raises m to v (one goroutine writes it).
func storeMax(m *atomic.Int64, v int64) {
	if v > m.Load() {
		m.Store(v)
	}
}

func attackByNr(nr int) attack {
	for _, a := range attacks {
		if a.nr == nr {
			return a
		}
	}
	panic(fmt.Sprintf("no attack %d", nr))
}

// mib formats bytes as MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// printPhase prints the phase's line for the victim and its attacks' answers.
func printPhase(r phaseResult, limit time.Duration) {
	fmt.Printf("\n--- Phase %s: Opfer %d recalls in %.1f s, p50 %s, p99 %s", r.name, len(r.lat.d), r.dur.Seconds(), ms(r.lat.pct(50)), ms(r.lat.pct(99)))
	if limit > 0 {
		fmt.Printf(" (Grenze %s)", ms(limit))
	}
	fmt.Printf(", Fehler %d; Heap lebend max %s (belegt %s), RSS max %s", r.lat.errs, mib(r.heapMax), mib(r.inuse), mib(r.rssMax))
	if slicesHas(r.nrs, 5) {
		fmt.Printf("; Angreiferdatei +%s", mib(r.growth))
	}
	fmt.Printf("\n    CPU: Server %.1f Kerne", r.srvCPU.Seconds()/r.srvWall.Seconds())
	if r.atkDur > 0 {
		fmt.Printf(", Angreiferprozess %.1f Kerne (%.1f s in %.1f s)", r.atkCPU.Seconds()/r.atkDur.Seconds(), r.atkCPU.Seconds(), r.atkDur.Seconds())
	}
	if r.loadMax > 0 {
		// Other work on the machine shows in every phase's latency: the
		// load tells a shared machine from a hurt the test is after.
		fmt.Printf("; Lastmittel der Maschine max %.1f", r.loadMax)
	}
	fmt.Println()
	if r.probe != nil {
		codes, _, _, _ := r.probe.counts()
		fmt.Printf("    Opfer: 429 für recalls %d; Sitzungsprobe %v", r.vic429, codes)
		if n, which := refused(r.probe); n > 0 {
			fmt.Printf(", abgelehnt %s", which)
		}
		fmt.Println()
	}
	if len(r.tallies) == 0 {
		return
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Angriff\tAnfragen\t2xx\t400\t404\t429\t503\t5xx sonst\tandere\tabgebrochen\tohne Antwort\t")
	for _, tl := range r.tallies {
		codes, cut, failed, _ := tl.counts()
		var all, ok, other, bad5 int
		for c, n := range codes {
			all += n
			switch {
			case c >= 200 && c < 300:
				ok += n
			case c >= 500 && c != 503:
				bad5 += n
			case c != 400 && c != 404 && c != 429 && c != 503:
				other += n
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", tl.name, all+cut+failed, ok,
			codes[400], codes[404], codes[429], codes[503], bad5, other, cut, failed)
	}
	tw.Flush()
	for _, tl := range r.tallies {
		if _, _, failed, first := tl.counts(); failed > 0 {
			fmt.Printf("  %s: %d ohne Antwort, z. B. %s\n", tl.name, failed, first)
		}
	}
}

// printSummary prints each phase's victim latency against the quiet one.
func printSummary(rs []phaseResult, quiet99, limit time.Duration) {
	if len(rs) == 0 {
		return
	}
	q50 := rs[0].lat.pct(50)
	fmt.Printf("\nOpfer je Phase (ruhig: p50 %s, p99 %s; Grenze p99 %s)\n", ms(q50), ms(quiet99), ms(limit))
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Phase\trecalls\tp50\tp50/ruhig\tp99\tp99/ruhig\tp99/Grenze\tLastmittel\t")
	ratio := func(a, b time.Duration) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(a)/float64(b))
	}
	for _, r := range rs {
		p50, p99 := r.lat.pct(50), r.lat.pct(99)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\t\n", r.name, len(r.lat.d), ms(p50), ratio(p50, q50), ms(p99), ratio(p99, quiet99), ratio(p99, limit), r.loadMax)
	}
	tw.Flush()
}

// attackNrs lists the attacks' numbers: "1, 2, 4, …".
func attackNrs() string {
	nrs := make([]string, len(attacks))
	for i, a := range attacks {
		nrs[i] = fmt.Sprint(a.nr)
	}
	return strings.Join(nrs, ", ")
}

func slicesHas(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// parsePhases turns -feind.angriffe into phases: each a list of attacks.
func parsePhases(spec string) ([][]int, []string, error) {
	var phases [][]int
	var names []string
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "ruhig" { // no attack, measured and checked like one: the noise of the measurement
			phases, names = append(phases, nil), append(names, f)
			continue
		}
		if f == "alle" {
			var all []int
			for _, a := range attacks {
				all = append(all, a.nr)
			}
			phases, names = append(phases, all), append(names, "alle")
			continue
		}
		var nr int
		if _, err := fmt.Sscan(f, &nr); err != nil {
			return nil, nil, fmt.Errorf("feind.angriffe: %q ist kein Angriff", f)
		}
		found := false
		for _, a := range attacks {
			found = found || a.nr == nr
		}
		if !found {
			return nil, nil, fmt.Errorf("feind.angriffe: Angriff %d gibt es nicht (%s)", nr, attackNrs())
		}
		phases, names = append(phases, []int{nr}), append(names, f)
	}
	return phases, names, nil
}
