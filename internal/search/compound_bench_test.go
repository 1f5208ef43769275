package search

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

// BenchmarkRecallExpansions measures recall over the 10,000 bench entries
// with compounds and typos on and off, interleaved in one loop so that the
// machine's noise hits both alike. It reports the median time of each per
// recall (on-ms, off-ms) and their ratio. "words" are the queries of
// BenchmarkSearch10k, every word known: the expansions cost only their
// dictionary lookups. "typos" and "compounds" are queries the expansions
// answer; their off side searches the query as it was meant ("Datenbank"
// for "Datenbnak", "Schlüssel Projekt" for "Schlüsselprojekt"), what an
// agent would have had to send.
func BenchmarkRecallExpansions(b *testing.B) {
	src := newFakeSource()
	fillSource(src, projA, 10_000)
	on := newTestRegistry(b, src, Options{IndexWait: time.Minute})
	off := newTestRegistry(b, src, Options{NoCompounds: true, NoTypos: true, IndexWait: time.Minute})
	for _, r := range []*Registry{on, off} {
		if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	type pair struct{ on, off string }
	sets := []struct {
		name string
		qs   []pair
	}{
		{"words", []pair{{"Datenbank Entscheidung", ""}, {"replication latency", ""}, {"index", ""}, {"Sicherung backup restore", ""}, {"Schlüssel", ""}, {"Protokoll", ""}}},
		{"typos", []pair{{"Datenbnak", "Datenbank"}, {"replicaton latency", "replication latency"}, {"Schlüsel", "Schlüssel"}}},
		{"compounds", []pair{{"Schlüsselprojekt", "Schlüssel Projekt"}, {"Projekt für den Schlüssel", "Projekt Schlüssel"}, {"Serverkonfiguration", "Server Konfiguration"}}},
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			var tOn, tOff []time.Duration
			i := 0
			for b.Loop() {
				q := set.qs[i%len(set.qs)]
				if q.off == "" {
					q.off = q.on
				}
				for _, run := range []struct {
					r    *Registry
					text string
					into *[]time.Duration
				}{{on, q.on, &tOn}, {off, q.off, &tOff}} {
					start := time.Now()
					if _, err := run.r.Search(context.Background(), projA, memory.SearchQuery{Text: run.text}); err != nil {
						b.Fatal(err)
					}
					*run.into = append(*run.into, time.Since(start))
				}
				i++
			}
			mOn, mOff := median(tOn), median(tOff)
			b.ReportMetric(float64(mOn.Microseconds())/1000, "on-ms")
			b.ReportMetric(float64(mOff.Microseconds())/1000, "off-ms")
			b.ReportMetric(float64(mOn)/float64(mOff), "on/off")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRecallWorstQuery measures the most expensive query the bounds
// allow: MaxQueryTerms long, unknown, compound-like words (every split point
// looked up, every one a typo candidate) over the 10,000 bench entries.
func BenchmarkRecallWorstQuery(b *testing.B) {
	src := newFakeSource()
	fillSource(src, projA, 10_000)
	r := newTestRegistry(b, src, Options{IndexWait: time.Minute})
	var words []string
	for i := range memory.MaxQueryTerms {
		words = append(words, searchtest.BenchWords[i%len(searchtest.BenchWords)]+"schluesselprojektdaten"[:4+i%16])
	}
	q := memory.SearchQuery{Text: strings.Join(words, " ")}
	if len(q.Text) > memory.MaxQuery {
		b.Fatalf("query of %d bytes", len(q.Text))
	}
	if _, err := r.Search(context.Background(), projA, memory.SearchQuery{Text: "x"}); err != nil {
		b.Fatal(err) // the build is not measured
	}
	for b.Loop() {
		if _, err := r.Search(context.Background(), projA, q); err != nil {
			b.Fatal(err)
		}
	}
}
