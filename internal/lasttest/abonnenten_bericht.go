//go:build last

// What the subscribers of -last.abonnenten heard: each write matched to its
// update at each subscriber, the misses, and the report lines; and the
// comparison of the same setup with and without subscribers.

package lasttest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/service"
)

// abErgebnis is what the subscribers of one run heard.
type abErgebnis struct {
	n int
	// writes are the changes the test's watcher heard during the load (all
	// projects), batches the batches they came in, feed the changes the
	// feed holds since the load began (a cross-check), unacked the changes
	// no agent got an answer for (not timed).
	writes, batches, feed, unacked int
	// proj and entry are, per (subscriber, write) pair, the time from the
	// write's acknowledgement to the arrival of the update that told of
	// it: for the project URI (every write of the project) and for the
	// entry URI (writes of the subscriber's slug). Negative: the update
	// came before the answer.
	proj, entry []time.Duration
	// missed are the writes a subscriber without a resync marker heard
	// nothing of (per subscriber and URI), collapsed the subscribers whose
	// updates were fewer than the batches (align: matched by time), extra
	// those that got more, resynced the subscribers of a project the hub
	// told to resync, broken those whose stream ended, others updates for
	// a URI nobody subscribed to.
	missed, collapsed, extra, resynced, broken, others int
	// received are the updates all subscribers got, until the settle.
	received  int
	firstMiss string
	settle    time.Duration
	ab        *abos
}

// evaluate matches each subscriber's updates to the batches of its project
// (align) and each write of a batch to the update that told of it.
func (ab *abos) evaluate(feed map[string][]service.Change, acks []quittung, settle time.Duration) abErgebnis {
	at := make(map[string]int64, len(acks))
	key := func(project, slug string, version int) string { return fmt.Sprintf("%s/%s#%d", project, slug, version) }
	for _, q := range acks {
		at[key(q.project, q.slug, q.version)] = q.at
	}
	ab.mu.Lock()
	defer ab.mu.Unlock()
	r := abErgebnis{n: len(ab.list), settle: settle, ab: ab}
	for p, batches := range ab.batches {
		r.batches += len(batches)
		for _, b := range batches {
			r.writes += len(b.changes)
			for _, ch := range b.changes {
				if _, ok := at[key(ch.Project, ch.Slug, ch.Version)]; !ok {
					r.unacked++
				}
			}
		}
		r.feed += len(feed[p])
	}
	match := func(s *abonnent, batches []stapel, got []int64, uri string, into *[]time.Duration) {
		idx, exact := align(batches, got)
		if !exact && len(got) < len(batches) {
			r.collapsed++
		}
		if len(got) > len(batches) {
			r.extra++
		}
		for b, k := range idx {
			if k < 0 {
				r.missed += len(batches[b].changes)
				if r.firstMiss == "" {
					ch := batches[b].changes[0]
					r.firstMiss = fmt.Sprintf("abonnent-%04d hörte %d Updates für %s zu %d Stapeln, nichts von %s v%d", s.id, len(got), uri, len(batches), ch.Slug, ch.Version)
				}
				continue
			}
			for _, ch := range batches[b].changes {
				if a, ok := at[key(ch.Project, ch.Slug, ch.Version)]; ok {
					*into = append(*into, time.Duration(got[k]-a))
				}
			}
		}
	}
	for _, s := range ab.list {
		s.mu.Lock()
		if s.streamErr != nil {
			r.broken++
		}
		r.others += s.others
		r.received += len(s.projectAt) + len(s.entryAt)
		if ab.resyncs[s.project] > 0 {
			// Told to read again: what it missed is not a miss.
			r.resynced++
			s.mu.Unlock()
			continue
		}
		batches := ab.batches[s.project]
		match(s, batches, s.projectAt, s.projectURI(), &r.proj)
		match(s, onSlug(batches, s.slug), s.entryAt, s.entryURI(), &r.entry)
		s.mu.Unlock()
	}
	slices.Sort(r.proj)
	slices.Sort(r.entry)
	return r
}

// print writes the subscribers' lines of one run.
func (r abErgebnis) print() {
	ab := r.ab
	fmt.Printf("Abonnenten: %d Sitzungen (%s, GET-Strom, je ein Abonnement auf das Projekt und auf einen umkämpften Eintrag), verbunden und abonniert in %s\n",
		r.n, abonnentProtocol, ms(ab.connWall))
	fmt.Printf("Speicher je Abonnent (Server und Client in einem Prozess): Sitzung mit GET-Strom und zweiter Verbindung %.1f KiB Go-Heap und Stacks (%.1f KiB RSS, %.1f Goroutinen), zwei Abonnements dazu %.2f KiB Heap (%.2f KiB RSS, %.2f Goroutinen) = %.2f KiB je Abonnement\n",
		ab.sessHeap/1024, ab.sessRSS/1024, ab.sessG, ab.subHeap/1024, ab.subRSS/1024, ab.subG, ab.subHeap/1024/2)
	fmt.Printf("Benachrichtigung nach der Bestätigung an den Schreiber, Projekt-URI: %d Paare (Abonnent × Schreibvorgang) p50 %s p99 %s max %s; Eintrags-URI: %d Paare p50 %s p99 %s max %s\n",
		len(r.proj), ms(pct(r.proj, 50)), ms(pct(r.proj, 99)), ms(pct(r.proj, 100)),
		len(r.entry), ms(pct(r.entry, 50)), ms(pct(r.entry, 99)), ms(pct(r.entry, 100)))
	fmt.Printf("Abonnements geprüft: %d Änderungen in %d Stapeln des Hubs (Feed: %d; %d ohne Bestätigung, nicht gemessen), verpasst %d, zusammengefasst (nach Zeit zugeordnet) %d, mit überzähligen Updates %d, Resync an %d Abonnenten, Ströme abgebrochen %d, fremde URIs %d; nach Lastende %s gewartet\n",
		r.writes, r.batches, r.feed, r.unacked, r.missed, r.collapsed, r.extra, r.resynced, r.broken, r.others, ms(r.settle))
}

// check fails the test for a missed update without resync.
func (r abErgebnis) check(t testing.TB) {
	if r.missed > 0 {
		t.Errorf("%d Änderungen erreichten einen Abonnenten nicht (ohne Resync; je Abonnent und URI gezählt), z. B. %s", r.missed, r.firstMiss)
	}
	if r.broken > 0 && r.resynced < r.broken {
		t.Errorf("%d GET-Ströme von Abonnenten endeten während der Last", r.broken)
	}
	if r.writes != r.feed {
		t.Errorf("der Hub meldete %d Änderungen, der Feed hält %d", r.writes, r.feed)
	}
}

// close ends every subscriber's stream and session.
func (ab *abos) close() {
	for _, s := range ab.list {
		s.close()
		s.hc.CloseIdleConnections()
	}
}

// compareAbonnenten runs the setup again in -last.abonnenten.paare pairs,
// one run with -last.abonnenten subscribers and one without, each on a
// fresh server, the order alternating from pair to pair so that a drift of
// the shared machine falls on both sides; it prints the throughput ratio
// (the median of the pairs' ratios) and the medians of the subscribers'
// numbers. The setup's first run is left out: it runs alone and first.
func compareAbonnenten(t *testing.T, a aufbau) {
	pairs := *lastAboPaare
	if pairs < 1 {
		t.Fatalf("-last.abonnenten.paare=%d: mindestens ein Paar, sonst prüft kein Lauf die Abonnenten", pairs)
	}
	var with, without []result
	var ratios []float64
	var heard []abErgebnis
	calls := func(r result) float64 { return float64(r.calls()) / r.dur.Seconds() }
	for i := range pairs {
		var w, o result
		runWith := func() {
			// With -last.profil the first run with subscribers is profiled.
			w = runSetup(t, a, *lastAgenten, lauf{abonnenten: *lastAbonnenten, quiet: true, profile: i == 0 && *lastProfil != ""})
			fmt.Printf("-- Paar %d mit Abonnenten: %.0f Aufrufe/s, remember %.0f/s; %d Updates an die Abonnenten, %.0f/s\n",
				i+1, calls(w), w.rememberRate(), w.abo.received, float64(w.abo.received)/w.dur.Seconds())
			w.abo.print()
		}
		runWithout := func() {
			o = runSetup(t, a, *lastAgenten, lauf{quiet: true})
			fmt.Printf("-- Paar %d ohne Abonnenten: %.0f Aufrufe/s, remember %.0f/s\n", i+1, calls(o), o.rememberRate())
		}
		if i%2 == 0 {
			runWith()
			runWithout()
		} else {
			runWithout()
			runWith()
		}
		with, without, heard = append(with, w), append(without, o), append(heard, *w.abo)
		ratios = append(ratios, calls(w)/calls(o))
	}
	rates := func(rs []result) (c, r []float64) {
		for _, x := range rs {
			c, r = append(c, calls(x)), append(r, x.rememberRate())
		}
		return c, r
	}
	wc, wr := rates(with)
	oc, or := rates(without)
	var all []string
	for _, r := range ratios {
		all = append(all, fmt.Sprintf("%.3f", r))
	}
	fmt.Printf("Abonnenten-Vergleich: %d Abonnenten, Aufrufe/s mit %.0f, ohne %.0f (Mediane); Verhältnis je Paar %s, Median %.3f (%+.1f %%); remember/s %.0f gegen %.0f\n",
		*lastAbonnenten, median(wc), median(oc), strings.Join(all, ", "), median(ratios), 100*(median(ratios)-1), median(wr), median(or))
	var p50, p99, mx, sess, sub []float64
	for _, h := range heard {
		p50 = append(p50, float64(pct(h.proj, 50)))
		p99 = append(p99, float64(pct(h.proj, 99)))
		mx = append(mx, float64(pct(h.proj, 100)))
		sess = append(sess, h.ab.sessHeap/1024)
		sub = append(sub, h.ab.subHeap/1024/2)
	}
	fmt.Printf("Abonnenten, Mediane aus %d Läufen: Projekt-URI p50 %s p99 %s max %s; Speicher je Sitzung mit Strom und zweiter Verbindung %.1f KiB, je Abonnement %.2f KiB (Go-Heap und Stacks, Server und Client)\n",
		pairs, ms(time.Duration(median(p50))), ms(time.Duration(median(p99))), ms(time.Duration(median(mx))), median(sess), median(sub))
}
