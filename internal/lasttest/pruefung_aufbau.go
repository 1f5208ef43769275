//go:build last

// Setup 5's wiring into runSetup: keys and the project's review setting,
// the reviewer's rows in the result, and the comparison with setup 1 of the
// same run.

package lasttest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"munin/internal/memory"
)

// reviewRole gives every other agent a propose key; the rest hold write
// keys, whose writes the project's review setting turns into proposals.
func reviewRole(i int) memory.Role {
	if i%2 == 1 {
		return memory.RolePropose
	}
	return memory.RoleWrite
}

// startReview turns review on for the (seeded) project, makes the
// reviewer's admin key, connects the reviewer and hands every agent the
// shared stand.
func startReview(t testing.TB, srv *server, a aufbau, hc *http.Client, agents []*agent) *pruefer {
	ctx := context.Background()
	ref := a.projects[0]
	if err := srv.app.Svc.SetProjectReview(ctx, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	tok, _, err := srv.app.Svc.CreateKey(ctx, ref, "pruefer-agent", memory.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	st := newStand(ref.String())
	for _, ag := range agents {
		ag.review = st
	}
	p, err := newPruefer(ctx, hc, srv.url, tok, st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// addReviewer adds the reviewer's rows to a load phase's result.
func (r *result) addReviewer(p *agent) {
	for _, tool := range reviewerTools {
		r.lat[tool] = append(r.lat[tool], p.lat[tool]...)
		r.errs[tool] += p.err[tool]
	}
	if r.firstErr == "" {
		r.firstErr = p.firstErr
	}
}

// agentCalls counts the agents' tool calls (the reviewer's left out): the
// figure setups compare.
func (r result) agentCalls() int {
	n := 0
	for _, tool := range tools[1:] {
		n += len(r.lat[tool])
	}
	return n
}

// compareReview prints setup 5 against setup 1 of the same run: the agents'
// calls per second, remember and recall p50/p99, CPU per call.
func compareReview(one, five result) {
	rate := func(r result) float64 { return float64(r.agentCalls()) / r.dur.Seconds() }
	lat := func(r result, tool string) string {
		l := slices.Clone(r.lat[tool])
		slices.Sort(l)
		return fmt.Sprintf("%s / %s", ms(pct(l, 50)), ms(pct(l, 99)))
	}
	fmt.Printf("Prüfung gegen Aufbau 1 desselben Laufs: Aufrufe der Agenten %.0f/s gegen %.0f/s (%+.0f %%); remember p50/p99 %s gegen %s; recall p50/p99 %s gegen %s; get p50/p99 %s gegen %s; CPU je Aufruf %.0f µs gegen %.0f µs\n",
		rate(five), rate(one), 100*(rate(five)/rate(one)-1), lat(five, "remember"), lat(one, "remember"),
		lat(five, "recall"), lat(one, "recall"), lat(five, "get"), lat(one, "get"), five.cpuPerCall(), one.cpuPerCall())
}
