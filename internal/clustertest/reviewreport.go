//go:build cluster

// The proposals' lines in the report and their part of the verdict.

package clustertest

import (
	"fmt"
	"io"
	"testing"
)

// unexpected returns the reviewer's unexpected errors and the first one.
func (r *reviewer) unexpected() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nBad, r.firstBad
}

// reviewerKeys maps each reviewed project to its reviewer's admin key.
func reviewerKeys(rs []*reviewer) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		out[r.project] = r.token
	}
	return out
}

// reviewedProjects lists the projects that have a reviewer.
func reviewedProjects(rs []*reviewer) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.project
	}
	return out
}

// inWorkspace keeps the items whose project (as project names it) is in
// workspace ws.
func inWorkspace[T any](items []T, ws string, project func(T) string) []T {
	var out []T
	for _, x := range items {
		if workspaceOf(project(x)) == ws {
			out = append(out, x)
		}
	}
	return out
}

// decisionCounts counts acknowledged approvals, rejections, approvals
// forwarded to the owner, and decisions sent to another node than their
// proposal (of those whose proposal was acknowledged: known).
func decisionCounts(props []proposalAck, decs []decisionAck) (approved, rejected, forwarded, elsewhere, known int) {
	node := map[string]int{}
	for _, p := range props {
		node[p.id] = p.node
	}
	for _, d := range decs {
		if d.approved {
			approved++
			if d.forwarded {
				forwarded++
			}
		} else {
			rejected++
		}
		if n, ok := node[d.proposal.id]; ok {
			known++
			if n != d.node {
				elsewhere++
			}
		}
	}
	return
}

// printReview writes the proposals' lines.
func printReview(w io.Writer, proposers []*agent, rs []*reviewer, props []proposalAck, decs []decisionAck, v *reviewVerdict) {
	outcomes := map[string]int{}
	for _, a := range proposers {
		o, _ := a.snapshot()
		for k, n := range o {
			outcomes[k] += n
		}
	}
	calls := map[string]int{}
	listed, already, moved := 0, 0, 0
	for _, r := range rs {
		r.mu.Lock()
		for k, n := range r.outcomes {
			calls[k] += n
		}
		listed, already, moved = listed+r.listed, already+r.already, moved+r.moved
		r.mu.Unlock()
	}
	approved, rejected, forwarded, elsewhere, known := decisionCounts(props, decs)
	fmt.Fprintf(w, "Vorschlagende (%d, propose-Schlüssel, MCP): %s; %d Vorschläge bestätigt\n", len(proposers), outcomeLine(outcomes), len(props))
	fmt.Fprintf(w, "Prüfer (%d, admin-Schlüssel, REST über Nicht-Eigentümer): %d Listen; genehmigt %d (an den Eigentümer weitergeleitet %d), verworfen %d; "+
		"über einen anderen Knoten als den des Vorschlags %d von %d; Konflikte: schon entschieden %d, Eintrag bewegt %d; Aufrufe: %s\n",
		len(rs), listed, approved, forwarded, rejected, elsewhere, known, already, moved, outcomeLine(calls))
	fmt.Fprintf(w, "Vorschläge nach den Runden: %d gelistet, %d Vorschläge und %d Entscheidungen verglichen, %d Einträge mit %d Fassungen gelesen: "+
		"verloren %d, doppelt genehmigt %d, Genehmigung ohne ihre Fassung %d, Fassung ohne Genehmigung %d, Lücken %d\n",
		v.listed, v.proposals, v.decisions, v.entries, v.versions, v.lost, v.twice, v.missing, v.leaked, v.gaps)
	for _, p := range v.problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// checkReview fails the test for what the proposal check found, and when
// the run proved too little: no proposal, approval or rejection
// acknowledged, no approval forwarded to an owner, or a decision sent to
// the node its proposal was made through.
func checkReview(t *testing.T, v *reviewVerdict, props []proposalAck, decs []decisionAck, syncMode bool) {
	if syncMode && v.lost > 0 {
		t.Errorf("bestätigte Vorschläge oder Entscheidungen verloren: %d", v.lost)
	}
	if v.twice > 0 || v.missing > 0 || v.leaked > 0 || v.gaps > 0 {
		t.Errorf("Vorschläge: %d doppelt genehmigt, %d genehmigt ohne ihre Fassung, %d Fassung ohne Genehmigung, %d Lücken",
			v.twice, v.missing, v.leaked, v.gaps)
	}
	approved, rejected, forwarded, elsewhere, known := decisionCounts(props, decs)
	if len(props) == 0 || approved == 0 || rejected == 0 || forwarded == 0 {
		t.Errorf("der Test bewies zu wenig: %d Vorschläge, %d Genehmigungen (%d weitergeleitet), %d Ablehnungen bestätigt",
			len(props), approved, forwarded, rejected)
	}
	if elsewhere != known {
		t.Errorf("%d von %d Entscheidungen gingen an den Knoten, über den ihr Vorschlag kam", known-elsewhere, known)
	}
}
