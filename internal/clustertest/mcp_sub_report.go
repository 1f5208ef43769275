//go:build cluster

// The MCP subscribers in the run: started with the writers, left to hear
// the last changes after them, checked (mcp_sub_check.go), reported in
// German lines beside the feed subscribers, and the test's verdict on them.

package clustertest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// mcpHearLimit bounds the wait, after the writers stopped and the feed was
// read, for the updates of the last changes: a hub whose read went to the
// paused owner waits for it up to its read timeout (10 s) first.
const mcpHearLimit = time.Minute

// verifyMCPSubscribers reads each subscriber's truth from the feed (the
// writers have stopped), waits until its open session heard every change
// of its window or mcpHearLimit passed, stops it and checks it. stopped is
// the SIGSTOP phase, if there was one.
func (c *cluster) verifyMCPSubscribers(subs []*mcpSubscriber, acks []ack, decs []decisionAck, stopped *paused) []*mcpVerdict {
	if len(subs) == 0 {
		return nil
	}
	acked := ackTimes(acks, decs)
	ctx, cancel := context.WithTimeout(context.Background(), feedDrainLimit())
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range subs {
		wg.Go(func() { m.feed.drain(ctx) })
	}
	wg.Wait()
	deadline := time.Now().Add(mcpHearLimit)
	for _, m := range subs {
		wg.Go(func() {
			for m.check(stopped, acked).open > 0 && time.Now().Before(deadline) {
				sleep(context.Background(), feedPauseMin)
			}
			m.stop()
			<-m.done
		})
	}
	wg.Wait()
	var vs []*mcpVerdict
	for _, m := range subs {
		vs = append(vs, m.check(stopped, acked))
	}
	return vs
}

// check checks what m heard so far against the feed its reader got.
func (m *mcpSubscriber) check(stopped *paused, acked map[string]time.Time) *mcpVerdict {
	m.feed.mu.Lock()
	changes := slices.Clone(m.feed.got)
	m.feed.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	windows := m.windows
	if stopped != nil {
		windows = cutAtPause(windows, stopped.idx, stopped.at)
	}
	return checkMCP(m.name, windows, m.notes, changes, m.projects, acked)
}

// printMCPSubscribers writes one line per subscriber, its counts and delays,
// and the first problems.
func printMCPSubscribers(w io.Writer, subs []*mcpSubscriber, vs []*mcpVerdict, stopped *paused) {
	for i, m := range subs {
		v := vs[i]
		m.mu.Lock()
		causes := map[string]int{}
		for _, win := range m.windows {
			causes[win.cause]++
		}
		fmt.Fprintf(w, "MCP-Abonnent %s (%s, read, %d Projekt-URIs, Start über n%d): %d Benachrichtigungen (updated) in %d Sitzungen, %d über einen Knoten ohne ihren Arbeitsbereich, %d über dessen Eigentümer, list_changed %d, Sitzungsenden: %s, Anfragen: %s\n",
			m.name, mcpProtocol, len(m.projects), m.firstNode, v.notes, len(m.windows), v.nonOwner, v.viaOwner, m.listChanged, outcomeLine(causes), outcomeLine(m.outcomes))
		windows := m.windows
		if stopped != nil {
			windows = cutAtPause(windows, stopped.idx, stopped.at)
		}
		if g := gaps(windows); len(g) > 0 {
			slices.Sort(g)
			var sum time.Duration
			for _, d := range g {
				sum += d
			}
			fmt.Fprintf(w, "  Lücken zwischen Sitzungen: %d, zusammen %s, längste %s (vom Sitzungsende, beim angehaltenen Knoten vom SIGSTOP, bis zum ersten neuen Abonnement)\n", len(g), sec(sum), sec(g[len(g)-1]))
		}
		if m.firstBad != "" {
			fmt.Fprintf(w, "  erster unerwarteter Fehler: %s\n", m.firstBad)
		}
		m.mu.Unlock()
		fmt.Fprintf(w, "  Änderungen der abonnierten Projekte im Feed %d, davon vor dem ersten Abonnement %d: in Sitzungen %d, davon benachrichtigt %d (über einen Knoten ohne ihren Arbeitsbereich %d), fehlend %d; entschuldigt: in Lücken zwischen Sitzungen %d, weniger als %s vor einem Sitzungsende ohne Benachrichtigung %d\n",
			v.changes, v.before, v.inWindow, v.notified, v.heardOther, v.missing, v.gap, mcpGapLead, v.tail)
		if len(v.delays) > 0 {
			d := slices.Clone(v.delays)
			slices.Sort(d)
			a := slices.Clone(v.ackDelays)
			slices.Sort(a)
			before := 0
			for _, x := range a {
				if x < 0 {
					before++
				}
			}
			fmt.Fprintf(w, "  vom Commit bis zur nächsten Benachrichtigung des Projekts (%d Änderungen): p50 %s, p99 %s, max %s", len(d), sec(pct(d, 50)), sec(pct(d, 99)), sec(pct(d, 100)))
			if o := slices.Sorted(slices.Values(v.otherDelays)); len(o) > 0 {
				fmt.Fprintf(w, "; davon über einen Knoten ohne den Arbeitsbereich (%d): p50 %s, p99 %s", len(o), sec(pct(o, 50)), sec(pct(o, 99)))
			}
			if len(a) > 0 {
				fmt.Fprintf(w, "; ab der Bestätigung (%d): p50 %s, p99 %s, %d schon vor der Bestätigung", len(a), sec(max(pct(a, 50), 0)), sec(max(pct(a, 99), 0)), before)
			}
			fmt.Fprintln(w)
		}
		for _, p := range v.problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

// checkMCPSubscribers is the verdict: no change heard of too late or never
// inside a window, no update of a URI not subscribed, no unexpected answer,
// the feed read to its end, and the subscribers proved something: changes
// inside windows, and changes heard through a node that did not own their
// workspace.
func checkMCPSubscribers(t *testing.T, subs []*mcpSubscriber, vs []*mcpVerdict) {
	if len(subs) == 0 {
		return
	}
	nonOwner := 0
	for i, m := range subs {
		v := vs[i]
		nonOwner += v.heardOther
		m.mu.Lock()
		if m.nBad > 0 {
			t.Errorf("MCP-Abonnent %s: %d unerwartete Antworten, zuerst %s", m.name, m.nBad, m.firstBad)
		}
		m.mu.Unlock()
		m.feed.mu.Lock()
		if !m.feed.drained || m.feed.nBad > 0 {
			t.Errorf("MCP-Abonnent %s: Feed zum Vergleich nicht bis zur leeren Seite gelesen (%v) oder unerwartete Antworten (%d, zuerst %s)", m.name, m.feed.drained, m.feed.nBad, m.feed.firstBad)
		}
		m.feed.mu.Unlock()
		if v.missing > 0 || v.foreign > 0 {
			t.Errorf("MCP-Abonnent %s: %d Änderungen in Sitzungen ohne Benachrichtigung danach, %d Benachrichtigungen für nicht abonnierte URIs", m.name, v.missing, v.foreign)
		}
		if v.inWindow == 0 {
			t.Errorf("MCP-Abonnent %s: keine Änderung während einer Sitzung: der Test bewies zu wenig", m.name)
		}
	}
	if nonOwner == 0 {
		t.Errorf("kein MCP-Abonnent hörte von einer Änderung über einen Knoten, der ihren Arbeitsbereich nicht besaß: der Test bewies zu wenig")
	}
}
