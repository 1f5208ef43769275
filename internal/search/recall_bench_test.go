//go:build unix

package search

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/search/searchbench"
)

// recallQueries are typical recalls of an agent over fillSource's entries:
// two or three words, German or English.
var recallQueries = []string{
	"Datenbank Entscheidung",
	"replication latency backup",
	"Sicherung Wiederherstellung",
	"deploy rollout agent",
	"Konfiguration Schema Migration",
	"cache invalidation",
}

// BenchmarkRecall10k measures one recall over 10,000 entries through the
// public search path, as the service calls it: SearchProjects with one
// project, limit 10, the hits read from the Source and their snippets made.
// cpu-µs/op is the CPU the process spent per recall, all threads (issue 11:
// at most 800 µs); with -cpu=1 on an idle machine ns/op is about the same.
//
// uniform is fillSource: ~60 words drawn evenly from 90, so each query word
// is in about 60 % of the entries and every query matches 91-97 % of the
// project: the worst case, every entry scored. corpus draws the entries'
// words from the recall quality corpus (quality/testdata/notes) as often as
// the notes use them, so word frequencies follow real notes, and asks that
// corpus' two- and three-word queries of word forms.
func BenchmarkRecall10k(b *testing.B) {
	b.Run("uniform", func(b *testing.B) {
		src := newFakeSource()
		fillSource(src, projA, 10_000)
		benchRecall(b, src, recallQueries)
	})
	b.Run("corpus", func(b *testing.B) {
		src := newFakeSource()
		words := corpusWords(b)
		fillFromWords(src, projA, words, 10_000)
		benchRecall(b, src, []string{
			"restored a damaged file", "Zertifikat erneuert", "failing deployments",
			"migrated runners", "compacting segments", "timestamp format", "Wunsch des Kunden",
		})
	})
}

func benchRecall(b *testing.B, src Source, queries []string) {
	searchbench.Recall(b, newTestRegistry(b, src, Options{}), []memory.ProjectRef{projA}, queries)
}

// corpusWords is every word of the recall quality corpus' notes, in order,
// repeats included.
func corpusWords(b *testing.B) []string {
	var words []string
	err := filepath.WalkDir(filepath.Join("quality", "testdata", "notes"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		words = append(words, strings.Fields(string(raw))...)
		return err
	})
	if err != nil || len(words) < 1000 {
		b.Fatalf("read corpus: %d words, %v", len(words), err)
	}
	return words
}

// fillFromWords writes n entries of ~60 words drawn from words (each as
// often as it occurs there), with a title of four of them and 2-3 tags.
func fillFromWords(src *fakeSource, ref memory.ProjectRef, words []string, n int) {
	rng := rand.New(rand.NewPCG(3, 4))
	tags := []string{"db", "infra", "adr", "ops", "team:core", "bug", "idee", "api"}
	pick := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ")
	}
	for i := range n {
		tt := []string{tags[rng.IntN(len(tags))], tags[rng.IntN(len(tags))]}
		if i%2 == 0 {
			tt = append(tt, tags[rng.IntN(len(tags))])
		}
		src.Put(ref, fmt.Sprintf("notes/entry-%05d", i), pick(4), pick(60), tt...)
	}
}
