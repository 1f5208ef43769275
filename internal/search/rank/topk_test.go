package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search/searcher"

	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// topkWords are the test corpora's words, English and German, with forms
// that share stems ("deploy", "deployments") and stop words.
var topkWords = strings.Fields(`cache invalidation latency replication backup restore
	deploy deployments deployed rollout agent runner runners migrated migration schema
	timestamp format segment segments compacting certificate
	Datenbank Entscheidung Sicherung Wiederherstellung Konfiguration Zertifikat erneuert
	Wunsch Kunden Speicher Leistung Fehler Fehlers Protokoll Abfrage Abfragen
	the a of und der die das with ohne`)

// TestExactTopKMatchesBleve compares exactTopK with bleve's search of the
// same query (buildQuery without tags) over random corpora: sizes from one
// entry to 3,000, small vocabularies (many equal scores, so the tie-break
// counts) and large ones, entries replaced and forgotten after the index was
// built (deleted documents, several segments). Hits, order and scores must
// agree for limits 1, 10 and 50.
func TestExactTopKMatchesBleve(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var compared, declined int
	sizes := []int{1, 2, 9, 60, 400, 3000}
	if raceEnabled {
		// The race detector slows indexing tenfold and this test has no
		// goroutines of its own: the largest corpus is smaller there.
		sizes[len(sizes)-1] = 600
	}
	for ci, size := range sizes {
		vocab := topkWords[:4+rng.IntN(len(topkWords)-4)]
		pick := func(lo, hi int) string {
			out := make([]string, lo+rng.IntN(hi-lo+1))
			for i := range out {
				out[i] = vocab[rng.IntN(len(vocab))]
			}
			return strings.Join(out, " ")
		}
		entry := func(i int) (slug, title, content string, tags []string) {
			slug = fmt.Sprintf("e%d-%d", ci, i)
			if rng.IntN(3) == 0 {
				slug = strings.ToLower(vocab[rng.IntN(len(vocab))]) + "-" + slug
			}
			for range rng.IntN(3) {
				tags = append(tags, strings.ToLower(vocab[rng.IntN(len(vocab))]))
			}
			return slug, pick(0, 4), pick(1, 3+rng.IntN(40)), tags
		}
		src := searchtest.NewSource()
		var slugList []string
		for i := range size {
			slug, title, content, tags := entry(i)
			src.Put(projA, slug, title, content, tags...)
			slugList = append(slugList, slug)
		}
		p := newProject(t, src, projA)
		// Builds the index: seconds for the largest corpus on a loaded
		// machine, so not one test step's deadline.
		buildCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, built, err := p.Ready(buildCtx)
		cancel()
		if err != nil {
			t.Fatalf("corpus %d: build the index of %d entries: %v", ci, size, err)
		}
		built()
		idx := churnedIndex(t, p, src, rng, min(size, 12), func() string { return slugList[rng.IntN(len(slugList))] }, entry)
		for range 60 {
			q := pick(1, 6)
			if rng.IntN(8) == 0 {
				q += " nowhereword"
			}
			terms := text.Analyze(q)
			if len(leavesOf(terms)) == 0 {
				continue
			}
			// One deadline per query: all 180 of a corpus can take longer
			// than one step's 10 s on a loaded machine.
			ctx := testCtx(t)
			for _, limit := range []int{1, 10, 50} {
				want, err := runSearch(ctx, idx, projA, buildQuery(terms, nil, nil), limit)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := exactTopK(ctx, idx, terms, limit)
				if !ok {
					if len(terms.ByAnalyzer[text.AnalyzerEN]) <= searcher.DisjunctionHeapTakeover {
						t.Fatalf("corpus %d, %q: exactTopK declined a query it covers", ci, q)
					}
					declined++
					continue
				}
				compared++
				if len(got) != len(want) {
					t.Fatalf("corpus %d (%d entries), %q, limit %d: %d hits, bleve %d", ci, size, q, limit, len(got), len(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if g.ID != w.ID || math.Abs(g.Score-w.Score) > 1e-9*math.Abs(w.Score) {
						t.Fatalf("corpus %d (%d entries), %q, limit %d, hit %d: %s %.17g, bleve %s %.17g",
							ci, size, q, limit, i, g.ID, g.Score, w.ID, w.Score)
					}
				}
			}
		}
	}
	t.Logf("%d compared, %d declined", compared, declined)
	if compared < 500 || declined == 0 {
		t.Fatalf("%d comparisons, %d declined: the corpora do not test what they should", compared, declined)
	}
}
