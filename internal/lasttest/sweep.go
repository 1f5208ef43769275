//go:build last

// The sweep (-last.stufen): one server, one project, growing agent counts.

package lasttest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

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
	tokens := srv.seed(a.projects, most, false)
	hc := transportFor(most)
	defer hc.CloseIdleConnections()
	agents, _ := connectAll(t, hc, srv.url, tokens, 0)
	for _, ag := range agents {
		ag.assign(a)
	}
	checkMix(t, srv, true)
	defer func() {
		for _, ag := range agents {
			ag.c.Close()
		}
	}()
	fmt.Printf("\n=== Stufen: ein Projekt, je Stufe %s, %d %% remember\n", *lastDauer, *lastSchreibanteil)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Agenten\tAufrufe je s\tremember je s\tp50\tp95\tp99\tFehler\t429\t5xx\t")
	written := map[string]int{}
	var rates []float64
	var serverErrors int64
	for _, n := range steps {
		rejectedBefore, fiveBefore := statusCounts.rejected.Load(), statusCounts.serverError.Load()
		res := drive(agents[:n], *lastDauer)
		rejected, five := statusCounts.rejected.Load()-rejectedBefore, statusCounts.serverError.Load()-fiveBefore
		serverErrors += five
		for p, n := range res.written {
			written[p] += n
		}
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
	checkStock(t, srv, a, written)
}
