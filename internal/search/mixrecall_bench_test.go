//go:build unix

package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/search/searchbench"
)

// mixTerms are the load test's eight domain words (internal/lasttest).
var mixTerms = []string{"datenbank", "schnittstelle", "sicherung", "migration", "zugriff", "leistung", "protokoll", "speicher"}

// mixQueriesOfLoadTest are the load test's search mix: a typo of each
// domain word, compounds of two domain words the entries hold apart, and
// seeded compounds' parts spelled apart (internal/lasttest/suchmix.go).
var mixQueriesOfLoadTest = []string{
	"datenbnak", "schnitstelle", "sicherugn", "migraton", "zugrif", "leistnug", "portokoll", "speichre",
	"Datenbankschnittstelle", "Leistungsprotokoll", "Protokollspeicher", "Datenbankspeicher",
	"Bericht über den Fehler", "Umgebung für Tests", "Neustart des Servers", "Plan für das Release",
}

// seedMix writes the load test's seeded project: n entries of two domain
// words each, every fourth with a compound.
func seedMix(src *fakeSource, n int) {
	komposita := []string{"Fehlerbericht", "Testumgebung", "Serverneustart", "Releaseplan"}
	for i := range n {
		a, c := mixTerms[i%len(mixTerms)], mixTerms[(i/len(mixTerms)+i+1)%len(mixTerms)]
		content := fmt.Sprintf("Notiz %d zu %s und %s\n\nWas das Team über %s beschlossen hat und warum; offen bleibt die Frage nach %s.", i, a, c, a, c)
		if i%4 == 0 {
			content += fmt.Sprintf(" Siehe auch: %s.", komposita[(i/4)%len(komposita)])
		}
		src.Put(projA, fmt.Sprintf("wissen/eintrag-%04d", i), "", content, a)
	}
}

// BenchmarkRecallMisch is the recalls of the load test's part misch below
// the transports: 500 seeded entries, recalls of a domain word (70 %) or of
// the search mix (30 %), and between them the writes of the mix (30 % of
// the calls, to 20 contested slugs), so the index has a few small segments
// beside its large one as under load. cpu-µs/op is the process's CPU per
// recall, the writes' indexing included.
func BenchmarkRecallMisch(b *testing.B) {
	src := newFakeSource()
	seedMix(src, 500)
	r := newTestRegistry(b, src, Options{})
	ctx := context.Background()
	for _, q := range append(mixQueriesOfLoadTest, mixTerms...) {
		if _, err := r.SearchProjects(ctx, []memory.ProjectRef{projA}, memory.SearchQuery{Text: q}); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(27, 2))
	hits, n := 0, 0
	cpu := searchbench.CPUTime(b)
	for b.Loop() {
		for rng.IntN(10) < 3 {
			slug := fmt.Sprintf("gemeinsam-%02d", rng.IntN(20))
			src.Put(projA, slug, "", fmt.Sprintf("Stand %d: %s", n, strings.Repeat(mixTerms[n%len(mixTerms)]+" ", 3)))
			if err := r.Queue(projA, slug); err != nil {
				b.Fatal(err)
			}
		}
		q := mixTerms[rng.IntN(len(mixTerms))]
		if rng.IntN(100) < 30 {
			q = mixQueriesOfLoadTest[rng.IntN(len(mixQueriesOfLoadTest))]
		}
		hs, err := r.SearchProjects(ctx, []memory.ProjectRef{projA}, memory.SearchQuery{Text: q})
		if err != nil {
			b.Fatal(err)
		}
		hits += len(hs)
		n++
	}
	b.ReportMetric(float64((searchbench.CPUTime(b)-cpu).Microseconds())/float64(n), "cpu-µs/op")
	b.ReportMetric(float64(hits)/float64(n), "hits/op")
}
