package rank

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/search/searchbench"
	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// BenchmarkExactTopK compares the exact tier's scoring without early
// termination (exhaustive), with MaxScore alone as recall does
// (maxscore.go) and with impact lists for large segments (impact_topk.go), on
// the same index in one run, limit 10:
//
//   - uniform is searchtest.Fill (each entry ~80 words drawn evenly from
//     the ~90 bench words, a title of three): every query word is in most
//     entries, the worst case;
//   - zipf draws titles and content from 5,000 words Zipf-distributed (as
//     the load test's data) and asks for one of the 20 most frequent words,
//     as the load test's "frequent" recall does; zipf-pairs asks for two
//     of them, one frequent word with one of rank 20 to 5,000; zipf-200
//     for each of the 200 most frequent in turn, as the load test's curve.
//
// impacts-2MiB reads with impact lists in a cache of 2 MiB of its own:
// what recall costs when most words' lists do not fit (they are read with
// MaxScore).
//
// cpu-µs/op is the CPU of one recall's scoring, all threads (hits' IDs
// included, no snippets), after each query ran once. Sizes: 1k, 10k, and 100k without -short (building it
// takes a minute or two). The index is built once per run, so the modes
// alternate on it MUNIN_BENCH_ROUNDS times (default 1; go test names the
// repeats #01, #02, ...) instead of with -count, which would rebuild it.
func BenchmarkExactTopK(b *testing.B) {
	top := b
	for _, n := range benchSizes() {
		for _, c := range []struct {
			name    string
			corpus  string // cases of one corpus share its index
			fill    func(src *searchtest.Source, n int)
			queries []string
		}{
			{"uniform", "uniform", fillUniform, []string{"Datenbank Entscheidung", "replication latency backup", "Sicherung Wiederherstellung", "deploy rollout agent", "Konfiguration Schema Migration", "cache invalidation"}},
			{"zipf", "zipf", fillZipf, searchtest.ZipfQueries()},
			{"zipf-pairs", "zipf", fillZipf, zipfPairs()},
			{"zipf-200", "zipf", fillZipf, zipfTop(200)},
		} {
			for range benchRounds() {
				for _, m := range []struct {
					name string
					mode topkMode
				}{
					{"exhaustive", topkMode{}},
					{"maxscore", topkMode{prune: true, minDocs: defaultTopK.minDocs}},
					{"impacts", withImpacts},
					{"impacts-2MiB", topkMode{prune: true, minDocs: withImpacts.minDocs, impacts: true, cache: smallImpacts}},
				} {
					b.Run(fmt.Sprintf("%s/%dk/%s", c.name, n/1000, m.name), func(b *testing.B) {
						idx := benchIndex(top, b, c.corpus, n, c.fill)
						terms := make([]text.Terms, len(c.queries))
						for i, q := range c.queries {
							terms[i] = text.Analyze(q)
						}
						ctx := context.Background()
						// Warm: the bounds and impact lists a segment
						// keeps are built by its first recall of a word.
						for _, t := range terms {
							exactTopKMode(ctx, idx, t, 10, m.mode, nil)
						}
						i := 0
						cpu := searchbench.CPUTime(b)
						for b.Loop() {
							if _, ok := exactTopKMode(ctx, idx, terms[i%len(terms)], 10, m.mode, nil); !ok {
								b.Fatal("declined")
							}
							i++
						}
						b.ReportMetric(float64((searchbench.CPUTime(b)-cpu).Microseconds())/float64(i), "cpu-µs/op")
						if m.mode.impacts {
							c := m.mode.impactCache()
							c.mu.Lock()
							b.ReportMetric(float64(c.bytes)/(1<<20), "impact-MiB")
							c.mu.Unlock()
						}
					})
				}
			}
		}
	}
}

func benchRounds() int {
	n, err := strconv.Atoi(os.Getenv("MUNIN_BENCH_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// benchSizes are 1k and 10k entries, and 100k without -short; or those
// listed in MUNIN_BENCH_SIZES (e.g. 1000000: the index is built inside the
// first sub-benchmark that uses it, so -bench can pick one corpus).
func benchSizes() []int {
	if env := os.Getenv("MUNIN_BENCH_SIZES"); env != "" {
		var sizes []int
		for _, f := range strings.Split(env, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
		return sizes
	}
	if testing.Short() {
		return []int{1_000, 10_000}
	}
	return []int{1_000, 10_000, 100_000}
}

var benchIndexes = map[string]bleve.Index{}

// benchIndex builds (once per run) the index of n entries made by fill; it
// lives as long as top, the benchmark that holds the sub-benchmark b.
func benchIndex(top, b *testing.B, name string, n int, fill func(*searchtest.Source, int)) bleve.Index {
	key := fmt.Sprint(name, n)
	if idx, ok := benchIndexes[key]; ok {
		return idx
	}
	src := searchtest.NewSource()
	fill(src, n)
	p := newProject(top, src, projA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Ready waits ten seconds at most; a large index takes longer to build.
	idx, release, err := p.Ready(ctx)
	for err != nil && ctx.Err() == nil {
		time.Sleep(time.Second)
		idx, release, err = p.Ready(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
	top.Cleanup(release)
	benchIndexes[key] = idx
	top.Cleanup(func() { delete(benchIndexes, key) })
	return idx
}

func fillUniform(src *searchtest.Source, n int) {
	searchtest.Fill(func(slug, title, content string, tags ...string) { src.Put(projA, slug, title, content, tags...) }, n)
}

func fillZipf(src *searchtest.Source, n int) { searchtest.PutZipf(src, projA, n) }

// zipfPairs are queries of two words of PutZipf's corpus: each of the 20
// most frequent with one of rank 20 to 5,000 (spread over the ranks).
func zipfPairs() []string {
	var qs []string
	for i, q := range searchtest.ZipfQueries() {
		qs = append(qs, q+" "+searchtest.ZipfWord(uint64(20+i*i*12)))
	}
	return qs
}

// zipfTop are queries of PutZipf's n most frequent words, one each.
func zipfTop(n int) []string {
	var qs []string
	for r := range uint64(n) {
		qs = append(qs, searchtest.ZipfWord(r))
	}
	return qs
}

var smallImpacts = newImpactCache(2<<20, impactTopMin, impactTopShare)
