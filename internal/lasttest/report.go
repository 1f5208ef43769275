//go:build last

// The load test's report: tables, percentiles, memory and counters.

package lasttest

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"munin/internal/app"
)

func batchStats(a *app.App) string {
	st := a.Store.Stats()
	ix := a.Index.Stats()
	per := func(x, y int64) float64 {
		if y == 0 {
			return 0
		}
		return float64(x) / float64(y)
	}
	return fmt.Sprintf("%d Schreibvorgänge in %d Transaktionen (%.1f je Transaktion); Index: %d Refreshes in %d Batches (%.1f je Batch), %d Index-Öffnungen",
		st.Writes, st.Batches, per(st.Writes, st.Batches), ix.Refreshes, ix.Batches, per(ix.Refreshes, ix.Batches), ix.Opened)
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func printTable(r result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Werkzeug\tAufrufe\tje s\tp50\tp95\tp99\tmax\tFehler\t")
	rows := slices.Clone(tools)
	if len(r.lat[recallMix]) > 0 {
		// Below recall: the part of its calls with a query of the mix.
		rows = []string{tools[0], tools[1], recallMix, tools[2], tools[3]}
	}
	for _, tool := range reviewerTools {
		if len(r.lat[tool]) > 0 || r.errs[tool] > 0 {
			rows = append(rows, tool) // setup 5's reviewer
		}
	}
	for _, tool := range rows {
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

// memoryNow returns the process's resident set (VmRSS) and the live Go heap
// plus goroutine stacks in bytes, after garbage of earlier phases was
// collected and freed memory was given back to the OS, so that two readings
// compare.
func memoryNow() (rss, heap uint64) {
	runtime.GC()
	debug.FreeOSMemory()
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
	return rss, ms.HeapAlloc + ms.StackInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// memoryPerSession connects len(tokens) more sessions, each over its own new
// connection as a new agent would, while the server is otherwise idle (index
// built, load over), and reports what they cost. Server and agents share the
// process, so the figure holds both ends of a session and its connection:
// an upper bound for the server's part.
func memoryPerSession(t testing.TB, url string, tokens []string) {
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
