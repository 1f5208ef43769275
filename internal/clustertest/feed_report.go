//go:build cluster

// The feed subscribers in the run: started with the writers, drained after
// them, checked (feed_check.go), reported in German lines beside the other
// counts, and the test's verdict on them.

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

// feedDrainLimit bounds the final read of each polling subscriber;
// streamDrainLimit the stream's wait for every ack: a stream reads the feed
// once per change (changestream's send), through the owners, and can lag
// far behind a busy cluster (LASTTEST.md) — this test asks that it gets
// everything, not how fast.
func feedDrainLimit() time.Duration { return hardLimit() }

const streamDrainLimit = 3 * time.Minute

// startSubscribers runs the polling subscribers in wg until ctx ends; the
// stream's reader runs on its own context, past the writers, until
// verifyFeeds (or the test's end) stops it.
func startSubscribers(t *testing.T, ctx context.Context, wg *sync.WaitGroup, subs []*subscriber) {
	for _, s := range subs {
		if !s.stream {
			wg.Go(func() { s.run(ctx) })
			continue
		}
		sctx, stop := context.WithCancel(context.Background())
		s.stop, s.done = stop, make(chan struct{})
		go func() { defer close(s.done); s.runStream(sctx) }()
		t.Cleanup(func() { stop(); <-s.done })
	}
}

// verifyFeeds drains every subscriber (the writers have stopped), checks
// what each received against the acks, and reads back, through the running
// nodes, the latest version of every entry the feeds showed.
func (c *cluster) verifyFeeds(subs []*subscriber, acks []ack, props []proposalAck, decs []decisionAck) []*feedVerdict {
	if len(subs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), feedDrainLimit())
	sctx, scancel := context.WithTimeout(context.Background(), streamDrainLimit)
	begin := time.Now()
	var wg sync.WaitGroup
	for _, s := range subs {
		if !s.stream {
			wg.Go(func() { s.drain(ctx) })
			continue
		}
		wg.Go(func() {
			complete := s.awaitAll(sctx, expectedItems(acks, props, decs, s.projects, s.role == "admin"))
			took := time.Since(begin)
			s.stop()
			<-s.done
			s.mu.Lock()
			s.drained, s.drainTook = complete, took
			s.mu.Unlock()
		})
	}
	wg.Wait()
	cancel()
	scancel()
	var vs []*feedVerdict
	var feeds [][]feedChange
	for _, s := range subs {
		s.mu.Lock()
		got := s.got
		s.mu.Unlock()
		items := expectedItems(acks, props, decs, s.projects, s.role == "admin")
		vs = append(vs, checkFeed(s.name, s.role, got, items, s.projects))
		feeds = append(feeds, got)
	}
	var bases []string
	for _, n := range c.nodes {
		if n.p != nil && !n.p.exited() {
			bases = append(bases, n.advertise())
		}
	}
	if len(bases) > 0 {
		checkPhantoms(context.Background(), newRESTReader(bases, c.probeKeys), feeds, vs, 8)
	}
	return vs
}

// printFeeds writes one line per subscriber and the first problems.
func printFeeds(w io.Writer, subs []*subscriber, vs []*feedVerdict) {
	for i, s := range subs {
		v := vs[i]
		s.mu.Lock()
		if s.stream {
			drained := fmt.Sprintf("alles Bestätigte erhalten, %s nach Beginn der Prüfung", sec(s.drainTook))
			if !s.drained {
				drained = fmt.Sprintf("in %s nach Beginn der Prüfung nicht alles Bestätigte erhalten", streamDrainLimit)
			}
			fmt.Fprintf(w, "Live-Strom %s (%s, %d Projekte, Start über n%d): %d Änderungen über %d Verbindungen, %d über einen Knoten ohne ihren Arbeitsbereich, %d Knotenwechsel, resync %d, failure %d, Verbindungen: %s; %s\n",
				s.name, s.role, len(s.projects), s.firstNode, v.received, s.pages, s.nonOwner, s.switches, s.resyncs, s.failures, outcomeLine(s.outcomes), drained)
		} else {
			drained := "bis zur leeren Seite gelesen"
			if !s.drained {
				drained = fmt.Sprintf("in %s nicht bis zur leeren Seite gelesen", feedDrainLimit())
			}
			fmt.Fprintf(w, "Feed-Abonnent %s (%s, %d Projekte, Start über n%d): %d Änderungen in %d Seiten, %d über einen Knoten ohne ihren Arbeitsbereich, %d Knotenwechsel, Anfragen: %s; %s\n",
				s.name, s.role, len(s.projects), s.firstNode, v.received, s.pages, s.nonOwner, s.switches, outcomeLine(s.outcomes), drained)
		}
		if len(s.delays) > 0 {
			d := slices.Clone(s.delays)
			slices.Sort(d)
			fmt.Fprintf(w, "  vom Schreiben bis zum Empfang (%d Änderungen nach dem Start): p50 %s, p99 %s, max %s\n", len(d), sec(pct(d, 50)), sec(pct(d, 99)), sec(pct(d, 100)))
		}
		if s.restarts > 0 {
			fmt.Fprintf(w, "  Cursor abgelaufen (async): %d-mal von vorn gelesen\n", s.restarts)
		}
		if s.firstBad != "" {
			fmt.Fprintf(w, "  erster unerwarteter Fehler: %s\n", s.firstBad)
		}
		s.mu.Unlock()
		fmt.Fprintf(w, "  bestätigt erwartet %d, gefunden %d: fehlend %d, doppelt %d, außer Reihenfolge %d, falsch %d, unsichtbar gesehen %d, ohne Fassung im Cluster %d\n",
			v.expected, v.found, v.missing, v.twice, v.disorder, v.wrong, v.hidden, v.phantom)
		for _, p := range v.problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

// checkFeeds is the verdict: in sync mode every acknowledged write exactly
// once per subscriber and nothing the cluster lost; in any mode nothing
// twice, nothing out of order, nothing hidden shown, no unexpected error,
// every subscriber read to an empty page, and the feeds proved something:
// changes delivered by a node that did not own their workspace, and (with
// rounds) a subscriber that went on through another node.
func checkFeeds(t *testing.T, subs []*subscriber, vs []*feedVerdict, syncMode bool, rounds int) {
	if len(subs) == 0 {
		return
	}
	nonOwner, switches, polling := 0, 0, 0
	for i, s := range subs {
		v := vs[i]
		s.mu.Lock()
		nonOwner += s.nonOwner
		if !s.stream {
			switches += s.switches
			polling++
		}
		if !s.drained {
			t.Errorf("Feed-Abonnent %s las nicht bis zur leeren Seite (%s; Strom: bis alles Bestätigte da war, %s)", s.name, feedDrainLimit(), streamDrainLimit)
		}
		if s.nBad > 0 {
			t.Errorf("Feed-Abonnent %s: %d unerwartete Antworten, zuerst %s", s.name, s.nBad, s.firstBad)
		}
		s.mu.Unlock()
		if v.twice > 0 || v.disorder > 0 || v.wrong > 0 || v.hidden > 0 {
			t.Errorf("Feed-Abonnent %s: doppelt %d, außer Reihenfolge %d, falsch %d, unsichtbar gesehen %d", s.name, v.twice, v.disorder, v.wrong, v.hidden)
		}
		if syncMode && (v.missing > 0 || v.phantom > 0) {
			t.Errorf("Feed-Abonnent %s: %d bestätigte Schreibvorgänge fehlen, %d Fassungen im Feed hat der Cluster nicht", s.name, v.missing, v.phantom)
		}
		if v.expected == 0 {
			t.Errorf("Feed-Abonnent %s erwartete nichts: der Test bewies zu wenig", s.name)
		}
	}
	if nonOwner == 0 {
		t.Errorf("kein Feed-Abonnent bekam eine Änderung über einen Knoten, der ihren Arbeitsbereich nicht besaß: der Test bewies zu wenig")
	}
	if rounds > 0 && polling >= nodeCount && switches == 0 {
		t.Errorf("kein Feed-Abonnent wechselte nach einem kill -9 den Knoten: der Test bewies zu wenig")
	}
}
