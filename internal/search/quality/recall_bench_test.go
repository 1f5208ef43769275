//go:build unix

package quality

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/search/searchbench"
	"munin/internal/store"
	"munin/internal/store/storetest"
)

// BenchmarkRecall10kStore is the search package's BenchmarkRecall10k with
// the real store as the Source: one recall over 10,000 entries of about 60
// words, limit 10, through SearchProjects, its hits read from SQLite.
// cpu-µs/op is the CPU the process spent per recall, all threads: the server
// CPU of one recall below the transports.
// corpus draws the words from the notes of testdata as often as they use
// them; uniform draws them evenly from the 90 words of the search package's
// benchmarks, so that every query matches nearly every entry.
func BenchmarkRecall10kStore(b *testing.B) {
	b.Run("corpus", func(b *testing.B) {
		var words []string
		for _, n := range loadNotes(b) {
			words = append(words, strings.Fields(n.title+" "+n.content)...)
		}
		benchStoreRecall(b, words, []string{
			"restored a damaged file", "Zertifikat erneuert", "failing deployments",
			"migrated runners", "compacting segments", "timestamp format", "Wunsch des Kunden",
		})
	})
	b.Run("uniform", func(b *testing.B) {
		benchStoreRecall(b, strings.Fields(uniformWords), []string{
			"Datenbank Entscheidung", "replication latency backup", "Sicherung Wiederherstellung",
			"deploy rollout agent", "Konfiguration Schema Migration", "cache invalidation",
		})
	})
}

// uniformWords are the search package's benchWords.
const uniformWords = `the index database decision we chose because latency throughput
replication backup restore cluster deploy rollout agent memory search query cache invalidation
die Datenbank Entscheidung wir haben weil Latenz Durchsatz Sicherung Wiederherstellung Bereitstellung
Speicher Suche Abfrage Zwischenspeicher und oder nicht mit für über unter Server Konfiguration
Migration Schema Tabelle Spalte Index Protokoll Schlüssel Projekt Arbeitsbereich Version`

func benchStoreRecall(b *testing.B, words, queries []string) {
	ctx := context.Background()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ref := memory.ProjectRef{Workspace: "acme", Project: "team"}
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		b.Fatal(err)
	}
	vs := storetest.Notes(10_000, words, rand.New(rand.NewPCG(3, 4)))
	for i := 0; i < len(vs); i += 1000 {
		if _, err := st.ImportVersions(ctx, ref, vs[i:i+1000], memory.DefaultMaxContent); err != nil {
			b.Fatal(err)
		}
	}
	reg := search.NewRegistry(st, search.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.Cleanup(func() { reg.Close() })
	searchbench.Recall(b, reg, []memory.ProjectRef{ref}, queries)
}
