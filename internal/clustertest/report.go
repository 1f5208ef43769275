//go:build cluster

// The cluster test's report: a line per round and the summary, in German
// like the load and crash tests' tables.

package clustertest

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// failover is what one outage measured: per workspace of the node that went
// away, the time from the kill (or SIGSTOP) until etcd showed a new owner
// and until a write through another node was acknowledged.
type failover struct {
	label       string // "Runde 3" or "SIGSTOP"
	node        string
	workspaces  []string
	newOwner    map[string]time.Duration // missing: none within the hard limit
	writesAgain map[string]time.Duration
	restart     time.Duration  // until the restarted node's /healthz answered 200 (0: not restarted)
	acks        int            // acknowledged versions so far
	sessions    int            // agents that held a session on the killed node
	spread      map[string]int // new owner (node name) → workspaces it took
}

// samples returns a metric's values over all failovers, sorted, and how
// many workspaces had no value (the hard limit ran out).
func samples(fs []failover, metric func(failover) map[string]time.Duration) (vals []time.Duration, missing int) {
	for _, f := range fs {
		m := metric(f)
		for _, ws := range f.workspaces {
			if d, ok := m[ws]; ok {
				vals = append(vals, d)
			} else {
				missing++
			}
		}
	}
	slices.Sort(vals)
	return vals, missing
}

func newOwnerOf(f failover) map[string]time.Duration    { return f.newOwner }
func writesAgainOf(f failover) map[string]time.Duration { return f.writesAgain }

// pct is the p-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// sec formats a duration as seconds with two decimals and a decimal comma.
func sec(d time.Duration) string {
	return strings.Replace(fmt.Sprintf("%.2f s", d.Seconds()), ".", ",", 1)
}

// maxOf is the largest value of m, and "–" when a workspace has none.
func maxOf(m map[string]time.Duration, wss []string) string {
	var best time.Duration
	for _, ws := range wss {
		d, ok := m[ws]
		if !ok {
			return "–"
		}
		best = max(best, d)
	}
	return sec(best)
}

// printRounds writes the table of outages.
func printRounds(w io.Writer, fs []failover) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Ausfall\tKnoten\tArbeitsbereiche\tneuer Eigentümer (max)\tSchreiben wieder (max)\tübernommen von\tNeustart bis healthz\tbestätigt bisher\t")
	for _, f := range fs {
		restart := "–"
		if f.restart > 0 {
			restart = sec(f.restart)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t\n", f.label, f.node, len(f.workspaces),
			maxOf(f.newOwner, f.workspaces), maxOf(f.writesAgain, f.workspaces), spreadOf(f.spread), restart, f.acks)
	}
	tw.Flush()
}

// spreadOf lists the new owners and how many workspaces each took.
func spreadOf(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(names, ", ")
}

// oneSurvivor counts the outages of at least two workspaces and those among
// them whose workspaces all went to one node.
func oneSurvivor(fs []failover) (all, several int) {
	for _, f := range fs {
		if len(f.workspaces) < 2 {
			continue
		}
		several++
		if len(f.spread) == 1 {
			all++
		}
	}
	return all, several
}

// printFailoverSummary writes p50/max of both times against their bounds.
func printFailoverSummary(w io.Writer, fs []failover, ttl time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Ausfallzeit je Arbeitsbereich\tMessungen\tp50\tmax\tGrenze\tohne Ergebnis\t")
	for _, m := range []struct {
		name   string
		metric func(failover) map[string]time.Duration
		bound  time.Duration
		label  string
	}{
		{"bis neuer Eigentümer in etcd", newOwnerOf, ttl + time.Second, "TTL + 1 s"},
		{"bis Schreiben wieder bestätigt", writesAgainOf, ttl + 3*time.Second, "TTL + 3 s"},
	} {
		v, missing := samples(fs, m.metric)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s (%s)\t%d\t\n", m.name, len(v), sec(pct(v, 50)), sec(pct(v, 100)), sec(m.bound), m.label, missing)
	}
	tw.Flush()
	all, several := oneSurvivor(fs)
	fmt.Fprintf(w, "Verteilung: in %d von %d Ausfällen mit mehreren Arbeitsbereichen übernahm ein einziger Knoten alle\n", all, several)
}

// outcomeLine sums the agents' outcomes into one line.
func outcomeLine(outcomes map[string]int) string {
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	names := map[string]string{outOK: "bestätigt", outUnavailable: "unavailable", outSession: "Sitzung verloren (404)",
		outConnection: "ohne Antwort", outOther: "andere Fehler"}
	for _, k := range keys {
		name := names[k]
		if name == "" {
			name = k
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, outcomes[k]))
	}
	return strings.Join(parts, ", ")
}

// printVerdict writes one check's result line and its first problems.
func printVerdict(w io.Writer, name string, v *verdict) {
	fmt.Fprintf(w, "%s: %d Einträge, %d Fassungen gelesen, %d Bestätigungen verglichen: verloren %d, Lücken %d\n",
		name, v.entries, v.versions, v.acks, v.lost, v.gaps)
	for _, p := range v.problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// printThroughput writes the comparison of cluster and single node.
func printThroughput(w io.Writer, agents int, d time.Duration, mode string, cluster, single float64) {
	ratio := 0.0
	if single > 0 {
		ratio = cluster / single
	}
	verdict := "erreicht"
	if ratio < 0.3 {
		verdict = "verfehlt"
	}
	fmt.Fprintf(w, "Durchsatz remember, %d Agenten, je %s: Cluster (%s, 3 Knoten) %.0f/s, ein Knoten %.0f/s, Verhältnis %s (Ziel ≥ 0,3: %s)\n",
		agents, d, mode, cluster, single, strings.Replace(fmt.Sprintf("%.2f", ratio), ".", ",", 1), verdict)
}
