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
	// writes are the changes committed during the load (all projects),
	// unacked those of them no agent got an answer for (not timed).
	writes, unacked int
	// proj and entry are, per (subscriber, write) pair, the time from the
	// write's acknowledgement to the update's arrival: for the project URI
	// (every write of the project) and for the entry URI (writes of the
	// subscriber's slug). Negative: the update came before the answer.
	proj, entry []time.Duration
	// missed are updates a subscriber without a resync marker did not get,
	// extra updates beyond the changes, resynced the subscribers that got a
	// resync marker, broken those whose stream ended, others updates for a
	// URI nobody subscribed to.
	missed, extra, resynced, broken, others int
	firstMiss                               string
	settle                                  time.Duration
	ab                                      *abos
}

// evaluate matches updates to writes: a subscriber hears its project's
// changes in commit order (the feed's order), so its k-th update for the
// project URI stands for the project's k-th change, its k-th update for
// the entry URI for the entry's k-th change.
func (ab *abos) evaluate(feed map[string][]service.Change, acks []quittung, settle time.Duration) abErgebnis {
	at := make(map[string]int64, len(acks))
	key := func(project, slug string, version int) string { return fmt.Sprintf("%s/%s#%d", project, slug, version) }
	for _, q := range acks {
		at[key(q.project, q.slug, q.version)] = q.at
	}
	r := abErgebnis{n: len(ab.list), settle: settle, ab: ab}
	for _, changes := range feed {
		r.writes += len(changes)
		for _, ch := range changes {
			if _, ok := at[key(ch.Project, ch.Slug, ch.Version)]; !ok {
				r.unacked++
			}
		}
	}
	match := func(s *abonnent, changes []service.Change, got []int64, uri string, into *[]time.Duration) {
		for k, ch := range changes {
			if k >= len(got) {
				r.missed += len(changes) - k
				if r.firstMiss == "" {
					r.firstMiss = fmt.Sprintf("abonnent-%04d hörte %d von %d Änderungen an %s, zuerst fehlt %s v%d", s.id, len(got), len(changes), uri, ch.Slug, ch.Version)
				}
				break
			}
			if a, ok := at[key(ch.Project, ch.Slug, ch.Version)]; ok {
				*into = append(*into, time.Duration(got[k]-a))
			}
		}
		r.extra += max(0, len(got)-len(changes))
	}
	for _, s := range ab.list {
		s.mu.Lock()
		if s.streamErr != nil {
			r.broken++
		}
		r.others += s.others
		if s.resyncs > 0 {
			// Told to read again: what it missed is not a miss.
			r.resynced++
			s.mu.Unlock()
			continue
		}
		changes := feed[s.project]
		match(s, changes, s.projectAt, s.projectURI(), &r.proj)
		match(s, onSlug(changes, s.slug), s.entryAt, s.entryURI(), &r.entry)
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
	fmt.Printf("Speicher je Abonnent (Server und Client in einem Prozess, mit HTTP-Verbindung): Sitzung mit GET-Strom %.1f KiB Go-Heap und Stacks (%.1f KiB RSS, %.1f Goroutinen), zwei Abonnements dazu %.2f KiB Heap (%.2f KiB RSS, %.2f Goroutinen) = %.2f KiB je Abonnement\n",
		ab.sessHeap/1024, ab.sessRSS/1024, ab.sessG, ab.subHeap/1024, ab.subRSS/1024, ab.subG, ab.subHeap/1024/2)
	fmt.Printf("Benachrichtigung nach der Bestätigung an den Schreiber, Projekt-URI: %d Paare (Abonnent × Schreibvorgang) p50 %s p99 %s max %s; Eintrags-URI: %d Paare p50 %s p99 %s max %s\n",
		len(r.proj), ms(pct(r.proj, 50)), ms(pct(r.proj, 99)), ms(pct(r.proj, 100)),
		len(r.entry), ms(pct(r.entry, 50)), ms(pct(r.entry, 99)), ms(pct(r.entry, 100)))
	fmt.Printf("Abonnements geprüft: %d Änderungen im Feed (%d ohne Bestätigung, nicht gemessen), verpasst %d, überzählig %d, Resync an %d Abonnenten, Ströme abgebrochen %d, fremde URIs %d; nach Lastende %s gewartet\n",
		r.writes, r.unacked, r.missed, r.extra, r.resynced, r.broken, r.others, ms(r.settle))
}

// check fails the test for a missed update without resync.
func (r abErgebnis) check(t testing.TB) {
	if r.missed > 0 {
		t.Errorf("%d Benachrichtigungen verpasst ohne Resync, z. B. %s", r.missed, r.firstMiss)
	}
	if r.broken > 0 && r.resynced < r.broken {
		t.Errorf("%d GET-Ströme von Abonnenten endeten während der Last", r.broken)
	}
}

// close ends every subscriber's stream and session.
func (ab *abos) close() {
	for _, s := range ab.list {
		s.close()
	}
	ab.hc.CloseIdleConnections()
}

// compareAbonnenten runs the setup again, alternating with and without
// -last.abonnenten subscribers (each run on a fresh server, the first run
// of the setup counted as one without), and prints the throughput ratio
// and the medians of the subscribers' numbers.
func compareAbonnenten(t *testing.T, a aufbau, first result) {
	const pairs = 3
	without := []result{first}
	var with []result
	var heard []abErgebnis
	for i := range pairs {
		res := runSetup(t, a, *lastAgenten, lauf{abonnenten: *lastAbonnenten, quiet: true})
		fmt.Printf("-- mit Abonnenten, Lauf %d: %.0f Aufrufe/s, remember %.0f/s\n", i+1, float64(res.calls())/res.dur.Seconds(), res.rememberRate())
		res.abo.print()
		with, heard = append(with, res), append(heard, *res.abo)
		without = append(without, runSetup(t, a, *lastAgenten, lauf{quiet: true}))
	}
	rates := func(rs []result) (calls, remember float64, all []string) {
		var c, w []float64
		for _, r := range rs {
			c = append(c, float64(r.calls())/r.dur.Seconds())
			w = append(w, r.rememberRate())
			all = append(all, fmt.Sprintf("%.0f", c[len(c)-1]))
		}
		return median(c), median(w), all
	}
	wc, wr, wAll := rates(with)
	oc, or, oAll := rates(without)
	fmt.Printf("Abonnenten-Vergleich: %d Abonnenten, Aufrufe/s mit %.0f (Median aus %s), ohne %.0f (Median aus %s): Verhältnis %.3f (%+.1f %%); remember/s %.0f gegen %.0f\n",
		*lastAbonnenten, wc, strings.Join(wAll, ", "), oc, strings.Join(oAll, ", "), wc/oc, 100*(wc/oc-1), wr, or)
	var p50, p99, mx, sess, sub []float64
	for _, h := range heard {
		p50 = append(p50, float64(pct(h.proj, 50)))
		p99 = append(p99, float64(pct(h.proj, 99)))
		mx = append(mx, float64(pct(h.proj, 100)))
		sess = append(sess, h.ab.sessHeap/1024)
		sub = append(sub, h.ab.subHeap/1024/2)
	}
	fmt.Printf("Abonnenten, Mediane aus %d Läufen: Projekt-URI p50 %s p99 %s max %s; Speicher je Sitzung mit Strom %.1f KiB, je Abonnement %.2f KiB (Go-Heap und Stacks, Server und Client)\n",
		pairs, ms(time.Duration(median(p50))), ms(time.Duration(median(p99))), ms(time.Duration(median(mx))), median(sess), median(sub))
}
