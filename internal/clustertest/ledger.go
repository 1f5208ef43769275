//go:build cluster

// The ledger of acknowledged writes: every remember a node answered with a
// version, with who sent it where and when. Everything the verifier demands
// comes from here — an acknowledged version must be readable with exactly
// its content at the end.

package clustertest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// ack is one acknowledged remember.
type ack struct {
	project string // workspace/project
	slug    string
	version int
	content string
	agent   string // who wrote it (an agent or a probe)
	node    int    // index of the node the request went to
	sent    time.Time
	done    time.Time
}

// slugRef names an entry across workspaces.
type slugRef struct{ project, slug string }

func (a ack) ref() slugRef { return slugRef{a.project, a.slug} }

// ledger collects acks from many goroutines, and the outcomes of the calls
// sent to one watched node after a moment (the paused node of the SIGSTOP
// phase).
type ledger struct {
	mu   sync.Mutex
	acks []ack
	// proposals and decisions are the acknowledged proposals and review
	// decisions (propose.go).
	proposals []proposalAck
	decisions []decisionAck

	watchNode  int
	watchSince time.Time // zero: no node watched
	watched    map[string]int
}

// watch starts counting the outcomes of calls sent to node from since on.
func (l *ledger) watch(node int, since time.Time) {
	l.mu.Lock()
	l.watchNode, l.watchSince, l.watched = node, since, map[string]int{}
	l.mu.Unlock()
}

// observe counts a call's outcome if it went to the watched node after the
// moment watched from.
func (l *ledger) observe(node int, sent time.Time, outcome string) {
	l.mu.Lock()
	if !l.watchSince.IsZero() && node == l.watchNode && !sent.Before(l.watchSince) {
		l.watched[outcome]++
	}
	l.mu.Unlock()
}

// watchedOutcomes returns the counts observe made.
func (l *ledger) watchedOutcomes() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.watched)
}

func (l *ledger) add(a ack) {
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// all returns a copy of every ack so far.
func (l *ledger) all() []ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// count returns how many acks there are.
func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// written returns the workspaces that have at least one ack.
func (l *ledger) written() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, a := range l.acks {
		out[workspaceOf(a.project)] = true
	}
	return out
}

// workspaceOf is the workspace part of "workspace/project".
func workspaceOf(project string) string {
	ws, _, _ := strings.Cut(project, "/")
	return ws
}

// bySlug groups acks by entry, each group in version order.
func bySlug(acks []ack) map[slugRef][]ack {
	out := map[slugRef][]ack{}
	for _, a := range acks {
		out[a.ref()] = append(out[a.ref()], a)
	}
	for _, as := range out {
		slices.SortFunc(as, func(x, y ack) int { return x.version - y.version })
	}
	return out
}

// contradictions finds what the acks alone prove lost, before anything is
// read back: one version of an entry acknowledged twice with different
// content (two owners wrote it), and, since each entry has one writer that
// waits for every answer, a later ack with a version not above an earlier
// one (the later owner did not have the earlier write).
func contradictions(acks []ack) []string {
	var out []string
	seen := map[slugRef]map[int]string{}
	last := map[slugRef]ack{}
	inOrder := slices.Clone(acks)
	slices.SortStableFunc(inOrder, func(x, y ack) int { return x.done.Compare(y.done) })
	for _, a := range inOrder {
		r := a.ref()
		if seen[r] == nil {
			seen[r] = map[int]string{}
		}
		if c, ok := seen[r][a.version]; ok && c != a.content {
			out = append(out, fmt.Sprintf("%s %s v%d zweimal bestätigt: %q und %q", a.project, a.slug, a.version, c, a.content))
		}
		seen[r][a.version] = a.content
		if p, ok := last[r]; ok && p.agent == a.agent && a.version <= p.version {
			out = append(out, fmt.Sprintf("%s %s: v%d bestätigt nach v%d (%s, Knoten n%d nach n%d)", a.project, a.slug, a.version, p.version, a.agent, a.node, p.node))
		}
		last[r] = a
	}
	return out
}

// rate is acks per second whose answer came in [from, to).
func rate(acks []ack, from, to time.Time) float64 {
	n := 0
	for _, a := range acks {
		if !a.done.Before(from) && a.done.Before(to) {
			n++
		}
	}
	if d := to.Sub(from).Seconds(); d > 0 {
		return float64(n) / d
	}
	return 0
}
