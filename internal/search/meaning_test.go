package search

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// backupNote and backupQuery share no word: only their meaning links them.
const (
	backupQuery = "How do we keep data safe if the disk dies?"
	backupNote  = "Snapshots are copied offsite every night; a restore is tested weekly."
)

// TestMeaningFindsParaphrase: a question in other words than the note finds
// it by meaning, where keyword recall finds nothing.
func TestMeaningFindsParaphrase(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	g.put(t, projA, "ops/release", "Release train", "Releases ship every second Tuesday after rollout review.")
	g.put(t, projA, "team/standup", "Standup", "Daily standup at nine, short sync.")

	words := newTestRegistry(t, g.src, Options{})
	if hits := searchAll(t, words, []memory.ProjectRef{projA}, memory.SearchQuery{Text: backupQuery}); len(hits) != 0 {
		t.Fatalf("keyword recall finds %v: the test needs a query sharing no word with the note", slugs(hits))
	}
	hits := g.recall(t, []memory.ProjectRef{projA}, backupQuery)
	if got, want := matches(hits), []string{"ops/backups:meaning"}; !slices.Equal(got, want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
	h := hits[0]
	if h.Project != projA || h.Title != "Nightly backups" || h.Version != 1 || h.Snippet == "" || h.Score <= 0 {
		t.Errorf("meaning hit %+v: want project, title, version, snippet and a positive score", h)
	}
}

// TestMeaningAndWordsSayBoth: a hit found by its words and by its meaning
// says both; one found by words only says words.
func TestMeaningAndWordsSayBoth(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	g.put(t, projA, "ops/disk-vendor", "Vendor", "Order spare parts from the vendor portal.")
	hits := g.recall(t, []memory.ProjectRef{projA}, "nightly backups")
	if got, want := matches(hits), []string{"ops/backups:both"}; !slices.Equal(got, want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
	hits = g.recall(t, []memory.ProjectRef{projA}, "vendor portal")
	if got, want := matches(hits), []string{"ops/disk-vendor:words"}; !slices.Equal(got, want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
}

// TestFusionRanksBothAboveSingle: reciprocal-rank fusion puts a hit that both
// paths rank second above the first of each path alone; between those two,
// equal sums, the keyword hit comes first.
func TestFusionRanksBothAboveSingle(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.emb.fix("kafka retention", 1, 0, 0)
	g.putVec(t, projA, "words-first", "kafka retention kafka retention", 0, 1, 0) // unrelated meaning
	g.putVec(t, projA, "both-second", "kafka retention "+filler(0, 30), 0.8, 0.6, 0)
	g.putVec(t, projA, "meaning-first", "topic cleanup policy", 1, 0, 0)
	hits := g.recall(t, []memory.ProjectRef{projA}, "kafka retention")
	want := []string{"both-second:both", "words-first:words", "meaning-first:meaning"}
	if got := matches(hits); !slices.Equal(got, want) {
		t.Fatalf("fused %v, want %v", got, want)
	}
	if !(hits[0].Score > hits[1].Score && hits[1].Score == hits[2].Score) {
		t.Errorf("scores %v, %v, %v: want the both-hit highest, the two single firsts equal",
			hits[0].Score, hits[1].Score, hits[2].Score)
	}
}

// TestMeaningFailureFallsBackToWords: whatever goes wrong with the query's
// embedding, recall answers with exactly the keyword hits and scores, each
// saying words; the failure is counted, and the recall does not fail.
func TestMeaningFailureFallsBackToWords(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *conceptEmbedder)
	}{
		{"error", func(e *conceptEmbedder) { e.set(errEndpoint, false) }},
		{"timeout", func(e *conceptEmbedder) { e.set(nil, true) }},
		{"NaN", func(e *conceptEmbedder) { e.fix("nightly backups", float32(math.NaN()), 1, 0, 0) }},
		{"zero vector", func(e *conceptEmbedder) { e.fix("nightly backups", 0, 0, 0, 0) }},
		{"wrong dimension", func(e *conceptEmbedder) { e.fix("nightly backups", 1, 0, 0, 0, 0, 0) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newMeaningRig(t, MeaningOptions{Wait: 50 * time.Millisecond})
			g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
			g.put(t, projA, "ops/night", "Night shift", "The nightly on-call rota.")
			g.put(t, projA, "ops/offsite", "Offsite", "Offsite snapshots of the disk.")
			tc.setup(g.emb)
			words := newTestRegistry(t, g.src, Options{})
			want := searchAll(t, words, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "nightly backups"})
			got := g.recall(t, []memory.ProjectRef{projA}, "nightly backups")
			if len(want) == 0 || !slices.EqualFunc(got, want, func(a, b memory.Hit) bool {
				return a.Slug == b.Slug && a.Score == b.Score && a.Snippet == b.Snippet && a.Match == memory.MatchWords
			}) {
				t.Fatalf("hits %v, want the keyword hits %v, all words", matches(got), matches(want))
			}
			if g.failures.Load() == 0 {
				t.Errorf("failure not counted")
			}
		})
	}
}

// TestMeaningIgnoresWrongDimension: a stored vector of another dimension than
// the project's (the one most of its vectors have) is never a meaning hit,
// whether loaded, in any order, or arriving later; nor is it taken for the
// project's dimension.
func TestMeaningIgnoresWrongDimension(t *testing.T) {
	for i := range 10 { // the store gives no order: the stray one may come first
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g := newMeaningRig(t, MeaningOptions{})
			g.emb.fix("vector probe", 1, 0, 0)
			g.putVec(t, projA, "right", "alpha text", 1, 0, 0)
			g.putVec(t, projA, "right-too", "beta text", 0, 1, 0)
			g.putVec(t, projA, "wrong-loaded", "gamma text", 1, 0)
			if got := matches(g.recall(t, []memory.ProjectRef{projA}, "vector probe")); !slices.Equal(got, []string{"right:meaning"}) {
				t.Fatalf("hits %v, want only the vector of the right dimension", got)
			}
			g.putVec(t, projA, "wrong-stored", "delta text", 1, 0, 0, 0) // after the load: OnStored
			g.putVec(t, projA, "right-stored", "epsilon text", 0.9, 0.1, 0)
			if got := matches(g.recall(t, []memory.ProjectRef{projA}, "vector probe")); !slices.Equal(got, []string{"right:meaning", "right-stored:meaning"}) {
				t.Fatalf("hits %v, want only the vectors of the right dimension", got)
			}
		})
	}
}

// TestMeaningAcrossProjects: meaning hits come from every project searched,
// ranked by similarity across them, and never from a project not searched.
func TestMeaningAcrossProjects(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	other := memory.ProjectRef{Workspace: "ws2", Project: "other"}
	g.emb.fix("vector probe", 1, 0, 0)
	g.putVec(t, projA, "a-far", "alpha text", 0.5, 0.5, 0)
	g.putVec(t, projB, "b-near", "beta text", 1, 0.1, 0)
	g.putVec(t, other, "not-searched", "gamma text", 1, 0, 0)
	hits := g.recall(t, []memory.ProjectRef{projA, projB}, "vector probe")
	if got, want := matches(hits), []string{"b-near:meaning", "a-far:meaning"}; !slices.Equal(got, want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
	if hits[0].Project != projB || hits[1].Project != projA {
		t.Errorf("projects %v, %v", hits[0].Project, hits[1].Project)
	}
}

// TestMeaningSkipsForgotten: a forgotten entry's vector, still in the loaded
// index, is not returned: the store has the last word, and the vector is
// dropped. An entry written again after that is found again.
func TestMeaningSkipsForgotten(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	if got := matches(g.recall(t, []memory.ProjectRef{projA}, backupQuery)); !slices.Equal(got, []string{"ops/backups:meaning"}) {
		t.Fatalf("before forget: %v", got)
	}
	g.src.Forget(projA, "ops/backups")
	refresh(t, g.r, projA, "ops/backups")
	if hits := g.recall(t, []memory.ProjectRef{projA}, backupQuery); len(hits) != 0 {
		t.Fatalf("after forget: %v", matches(hits))
	}
	if n := g.vecSize(t, projA); n != 0 {
		t.Errorf("index holds %d vectors after forget, want 0", n)
	}
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	if got := matches(g.recall(t, []memory.ProjectRef{projA}, backupQuery)); !slices.Equal(got, []string{"ops/backups:meaning"}) {
		t.Fatalf("after remember again: %v", got)
	}
}

func (g *meaningRig) vecSize(t testing.TB, ref memory.ProjectRef) int {
	t.Helper()
	idx, err := g.r.meaning.Index(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	return idx.Size()
}

// TestMeaningTagsAndLimit: the query's tags restrict meaning hits as they
// restrict keyword hits, and the limit holds for the fused list.
func TestMeaningTagsAndLimit(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.emb.fix("vector probe", 1, 0, 0)
	for i := range 5 {
		g.putVec(t, projA, fmt.Sprintf("tagged-%d", i), "text", 1, float32(i)/10, 0)
	}
	g.src.Put(projA, "tagged-2", "tagged-2", "text", "ops")
	refresh(t, g.r, projA, "tagged-2")
	hits := g.recall(t, []memory.ProjectRef{projA}, "vector probe", "ops")
	if got := matches(hits); !slices.Equal(got, []string{"tagged-2:meaning"}) {
		t.Fatalf("tagged hits %v", got)
	}
	hits, err := g.r.SearchProjects(testCtx(t), []memory.ProjectRef{projA}, memory.SearchQuery{Text: "vector probe", Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].Slug != "tagged-0" {
		t.Fatalf("limit 2: %v, %v", matches(hits), err)
	}
}

// TestMeaningOffCallsNothing: without a vector source the meaning path is
// off: the embedder is never called and hits say words.
func TestMeaningOffCallsNothing(t *testing.T) {
	src, emb := newFakeSource(), &conceptEmbedder{}
	r := newTestRegistry(t, src, Options{Meaning: MeaningOptions{Embedder: emb}})
	src.Put(projA, "ops/backups", "Nightly backups", backupNote)
	hits := searchAll(t, r, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "nightly"})
	if got := matches(hits); !slices.Equal(got, []string{"ops/backups:words"}) {
		t.Fatalf("hits %v", got)
	}
	r.OnStored([]memory.Vector{{Project: projA, Slug: "x", Version: 1, Model: testModel, Values: []float32{1}}})
	if n := emb.calls.Load(); n != 0 {
		t.Errorf("embedder called %d times with meaning off", n)
	}
}

// TestMeaningQueryCache: a repeated query is embedded once.
func TestMeaningQueryCache(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	for range 3 {
		g.recall(t, []memory.ProjectRef{projA}, backupQuery)
	}
	if n := g.emb.calls.Load(); n != 1 {
		t.Errorf("embedder called %d times for one query repeated, want 1", n)
	}
}

// TestMeaningStoredDuringLoad: vectors stored while a project's vectors are
// being loaded are not lost: they are applied after the load.
func TestMeaningStoredDuringLoad(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.emb.fix("vector probe", 1, 0, 0)
	g.putVec(t, projA, "before", "alpha", 1, 0.2, 0)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	g.vecs.hook = func(memory.ProjectRef) { once.Do(func() { close(entered); <-release }) }
	done := make(chan []memory.Hit)
	go func() {
		hits, _ := g.r.SearchProjects(testCtx(t), []memory.ProjectRef{projA}, memory.SearchQuery{Text: "vector probe"})
		done <- hits
	}()
	<-entered
	// The store commits a vector after the load read its snapshot, and
	// tells the index: OnStored, while the load is still running.
	v := g.src.Put(projA, "during", "during", "beta")
	refresh(t, g.r, projA, "during")
	g.r.OnStored([]memory.Vector{{Project: projA, Slug: "during", Version: v.Version, Model: testModel, Values: []float32{1, 0.1, 0}}})
	close(release)
	<-done
	if got := matches(g.recall(t, []memory.ProjectRef{projA}, "vector probe")); !slices.Equal(got, []string{"during:meaning", "before:meaning"}) {
		t.Fatalf("hits %v, want the vector stored during the load", got)
	}
}

// TestMeaningLoadFailureRetried: a project whose vectors cannot be loaded
// answers by words and is loaded again by the next recall.
func TestMeaningLoadFailureRetried(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.put(t, projA, "ops/backups", "Nightly backups", backupNote)
	g.vecs.err = errEndpoint
	if hits := g.recall(t, []memory.ProjectRef{projA}, "nightly backups"); !slices.Equal(matches(hits), []string{"ops/backups:words"}) {
		t.Fatalf("with vectors failing: %v", matches(hits))
	}
	if g.failures.Load() == 0 {
		t.Errorf("load failure not counted")
	}
	g.vecs.mu.Lock()
	g.vecs.err = nil
	g.vecs.mu.Unlock()
	if hits := g.recall(t, []memory.ProjectRef{projA}, "nightly backups"); !slices.Equal(matches(hits), []string{"ops/backups:both"}) {
		t.Fatalf("after the store recovered: %v", matches(hits))
	}
}

// TestMeaningConcurrentStoreAndSearch: vectors stored, entries forgotten and
// written again while recalls run (under -race): no race, no failure, and
// afterwards every live entry is found by meaning.
func TestMeaningConcurrentStoreAndSearch(t *testing.T) {
	g := newMeaningRig(t, MeaningOptions{})
	g.emb.fix("vector probe", 1, 0, 0)
	g.putVec(t, projA, "seed", "seed", 1, 0, 0)
	const writers, perWriter, searchers = 4, 25, 4
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, searchers)
	for range searchers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := g.r.SearchProjects(testCtx(t), []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "vector probe", Limit: 50}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Go(func() {
			for i := range perWriter {
				slug := fmt.Sprintf("w%d/e%d", w, i)
				g.putVec(t, projA, slug, "text", 1, float32(i+1)/100, float32(w))
				if i%5 == 0 {
					g.src.Forget(projA, slug)
					refresh(t, g.r, projA, slug)
				}
			}
		})
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every live entry, found by meaning alone: ask for each one's exact vector.
	for w := range writers {
		for i := range perWriter {
			slug := fmt.Sprintf("w%d/e%d", w, i)
			vec := []float32{1, float32(i+1) / 100, float32(w)}
			probe := fmt.Sprintf("probe %d", w*1000+i) // no word of the entry: meaning alone
			g.emb.fix(probe, vec...)
			hits := searchAll(t, g.r, []memory.ProjectRef{projA}, memory.SearchQuery{Text: probe, Limit: 1})
			found := len(hits) == 1 && hits[0].Slug == slug
			if forgotten := i%5 == 0; found == forgotten {
				t.Errorf("%s: found %v (%v), forgotten %v", slug, found, matches(hits), forgotten)
			}
		}
	}
}

// TestMeaningFailureLogIsBounded: an endpoint that keeps failing is counted
// on every recall, but logged only for the first few (then once a minute).
func TestMeaningFailureLogIsBounded(t *testing.T) {
	src, emb, vecs := newFakeSource(), &conceptEmbedder{}, &fakeVectors{}
	emb.set(errEndpoint, false)
	var lines countingHandler
	var failures int
	r := newTestRegistry(t, src, Options{Logger: slog.New(&lines), Meaning: MeaningOptions{
		Embedder: emb, Vectors: vecs, OnFailure: func() { failures++ },
	}})
	src.Put(projA, "ops/backups", "Nightly backups", backupNote)
	for range 20 {
		searchAll(t, r, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "nightly"})
	}
	if failures != 20 || lines.n.Load() != 3 {
		t.Errorf("%d failures counted, %d logged; want 20 counted, 3 logged", failures, lines.n.Load())
	}
}

// countingHandler counts log records.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countingHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countingHandler) WithGroup(string) slog.Handler             { return h }
