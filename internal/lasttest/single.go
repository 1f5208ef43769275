//go:build last

// Setup 4's side measurement: what one recall across every project costs
// next to one recall in one project, on the same server, data and session,
// with nothing else running — the load table mixes that cost with queueing.

package lasttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// singleRounds and singleBlock: the recalls alternate in blocks (across all
// projects and in one, in turns first), so that drift of the shared machine
// and the index's background merging after the load hit both alike.
const (
	singleRounds = 4
	singleBlock  = 50
)

// compareRecallScope times recalls of one session holding every project's
// read key after the load: without project (across all) and with a
// project (one), and prints p50/p99 and the CPU per recall of each.
func compareRecallScope(t testing.TB, srv *server, a aufbau) {
	ctx := context.Background()
	hc := transportFor(1)
	defer hc.CloseIdleConnections()
	ag, _, err := connect(ctx, hc, srv.url, strings.Join(srv.checkers, ","), -100)
	if err != nil {
		t.Fatalf("verbinden zur Einzelmessung: %v", err)
	}
	defer ag.c.Close()
	var lat [2][]time.Duration // 0: across all projects, 1: in one
	var cpu [2]time.Duration
	n := 0
	for round := range singleRounds {
		for i := range 2 {
			scope := (round + i) % 2 // ABBA: neither kind always runs first
			cpu0 := cpuTime()
			for range singleBlock {
				args := map[string]any{"query": terms[n%len(terms)]}
				if scope == 1 {
					args["project"] = a.projects[n%len(a.projects)].String()
				}
				n++
				start := time.Now()
				if _, err := ag.call(ctx, "recall", args); err != nil {
					t.Fatalf("Einzelmessung recall %v: %v", args, err)
				}
				lat[scope] = append(lat[scope], time.Since(start))
			}
			cpu[scope] += cpuTime() - cpu0
		}
	}
	line := func(i int) string {
		l := slices.Clone(lat[i])
		slices.Sort(l)
		return fmt.Sprintf("p50 %s, p99 %s, CPU %.0f µs je recall", ms(pct(l, 50)), ms(pct(l, 99)),
			float64(cpu[i].Microseconds())/float64(len(l)))
	}
	fmt.Printf("recall ohne Last (ein Agent, je %d nacheinander): über alle %d Projekte %s; in einem Projekt %s\n",
		singleRounds*singleBlock, len(a.projects), line(0), line(1))
}
