package search

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/de"

	"munin/internal/memory"
)

// TestMatchSpansAsFullAnalysis: the word pre-filter of matchSpans finds the
// same marks as analyzing the whole content, for English, German and mixed
// word forms, umlauts, possessives, acronyms and random words.
func TestMatchSpansAsFullAnalysis(t *testing.T) {
	r := newTestRegistry(t, newFakeSource(), Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{
		"Die Häuser der Datenbanken; John's indexing was invalidated. IT owns the Boeing queue, Grüße aus Köln!",
		"Straße STRASSE strasse Maße massen Aerodynamik aero über Ueber toy toys cry cries happy happiness",
		// Where words meet other scripts, marks, joiners and odd spaces.
		"日本Datenbank Datenbank日本 カタカナindex ab\u0301c \u0301Datenbank x_Datenbank _index " +
			"Daten\u202FBank Daten\u00A0Bank\tindex\nIndex\r\nDB-Index e.g. 3.5Datenbank Datenbank's " +
			"(Index) «Daten» Index… αβγindex index😀Datenbank Ünderung ÄÖÜäöü ǅemo Ωmega",
		prose(rng, 4<<10),
		randomWords(rng, 4<<10),
		trickyText(rng, 4<<10),
	}
	var queries []string
	for _, text := range texts {
		words := strings.Fields(text)
		for range 20 {
			queries = append(queries, words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))])
		}
	}
	for _, text := range texts {
		for _, q := range queries {
			mk := r.newMarker(q)
			got, terms := mk.spans(text), mk.terms
			var want []span
			for i, name := range snippetAnalyzers {
				for _, tok := range r.mapping.AnalyzerNamed(name).Analyze([]byte(text)) {
					if terms[i][string(tok.Term)] {
						want = append(want, span{tok.Start, tok.End})
					}
				}
			}
			less := func(a, b span) int { return a.start - b.start }
			slices.SortFunc(got, less)
			slices.SortFunc(want, less)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("query %q in %.40q: spans %v, want %v", q, text, got, want)
			}
		}
	}
}

// trickyText joins word pieces and other scripts with every kind of
// separator, so words meet ideographs, marks, joiners and odd spaces.
func trickyText(rng *rand.Rand, n int) string {
	pieces := []string{"Daten", "bank", "index", "Index", "ab", "ü", "ue", "ß", "日", "本", "カタ", "α", "3", "5",
		"_", "'", ".", ",", ":", "-", "\u0301", "\u200d", "\u00a0", "\u202f", "\u3000", "😀", "«", "»"}
	seps := []string{"", "", "", " ", "\t", "\n", "\r\n"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[rng.IntN(len(pieces))])
		b.WriteString(seps[rng.IntN(len(seps))])
	}
	return b.String()
}

// BenchmarkMatchSpans64k is the snippet work of one 64 KB hit.
func BenchmarkMatchSpans64k(b *testing.B) {
	r := newTestRegistry(b, newFakeSource(), Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ name, text string }{{"random", randomWords(rng, 64<<10)}, {"prose", prose(rng, 64<<10)}} {
		b.Run(c.name, func(b *testing.B) {
			words := strings.Fields(c.text)
			q := words[7] + " " + words[99] + " Datenbank"
			for b.Loop() {
				r.newMarker(q).spans(c.text)
			}
		})
	}
}

// TestGermanNormalizeAsBleve: mayMatch's normalization is bleve's.
func TestGermanNormalizeAsBleve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	letters := []rune("aeouiqyäöüßbxAE")
	words := []string{"häuser", "grüße", "boeing", "aeae", "queue", "straße", "ueber", "quelle", ""}
	for range 2000 {
		w := make([]rune, 1+rng.IntN(7))
		for i := range w {
			w[i] = letters[rng.IntN(len(letters))]
		}
		words = append(words, string(w))
	}
	for _, w := range words {
		tok := &analysis.Token{Term: []byte(w)}
		want := string(de.NewGermanNormalizeFilter().Filter(analysis.TokenStream{tok})[0].Term)
		if got := string(germanNormalize([]byte(w))); got != want {
			t.Errorf("germanNormalize(%q) = %q, bleve %q", w, got, want)
		}
	}
}

// TestHitsShowLatestVersion: a hit shows its entry's latest version, read
// after the search. An entry forgotten after the index matched it (its
// refresh not yet applied) is left out, so it never comes back
// (invariant 3); one replaced meanwhile shows the new version.
func TestHitsShowLatestVersion(t *testing.T) {
	src := newFakeSource()
	src.put(projA, "gone", "Gone", "zebra crossing")
	src.put(projA, "moved", "Moved", "zebra stripes")
	src.put(projA, "kept", "Kept", "zebra herd")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "zebra")); len(got) != 3 {
		t.Fatalf("before: %v, want 3 hits", got)
	}
	// Committed, not yet queued: the index still holds the old versions.
	src.forget(projA, "gone")
	src.put(projA, "moved", "Moved on", "zebra stripes, renamed")
	hits := find(t, r, projA, "zebra")
	got := map[string]memory.Hit{}
	for _, h := range hits {
		got[h.Slug] = h
	}
	if _, ok := got["gone"]; ok || len(hits) != 2 {
		t.Errorf("hits %v: the forgotten entry came back", slugs(hits))
	}
	if h := got["moved"]; h.Version != 2 || h.Title != "Moved on" {
		t.Errorf("moved: version %d %q, want the latest (2, Moved on)", h.Version, h.Title)
	}
}

// manyFake is a fakeSource that rereads many slugs at once, as the store
// does, and counts its reads.
type manyFake struct {
	*fakeSource
	mu                 sync.Mutex
	many, latest, gets int
}

func (s *manyFake) LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error) {
	s.mu.Lock()
	s.many++
	s.mu.Unlock()
	out := map[string]memory.Version{}
	for _, slug := range slugs {
		if v, err := s.fakeSource.Latest(ctx, ref, slug); err == nil {
			out[slug] = v
		}
	}
	return out, nil
}

func (s *manyFake) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	s.mu.Lock()
	s.latest++
	s.mu.Unlock()
	return s.fakeSource.Latest(ctx, ref, slug)
}

func (s *manyFake) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.fakeSource.Get(ctx, ref, slug, version)
}

// TestHitsReadOncePerProject: a Source that rereads many slugs at once is
// asked once per project for all of a recall's hits, not once per hit.
func TestHitsReadOncePerProject(t *testing.T) {
	src := &manyFake{fakeSource: newFakeSource()}
	for i := range 6 {
		src.put(projA, fmt.Sprintf("a%d", i), "A", "zebra")
		src.put(projB, fmt.Sprintf("b%d", i), "B", "zebra")
	}
	r := newTestRegistry(t, src, Options{})
	hits, err := r.SearchProjects(testCtx(t), []memory.ProjectRef{projA, projB}, memory.SearchQuery{Text: "zebra"})
	if err != nil || len(hits) != 10 {
		t.Fatalf("%d hits, %v; want 10", len(hits), err)
	}
	if src.many != 2 || src.latest != 0 || src.gets != 0 {
		t.Errorf("reads: %d LatestMany, %d Latest, %d Get; want 2 LatestMany (one per project)", src.many, src.latest, src.gets)
	}
}

// TestMeaningHitsReadOncePerProject: the hits only the meaning path found
// are read from a Source that rereads many slugs at once in one call per
// project, not one per hit; a forgotten one is left out.
func TestMeaningHitsReadOncePerProject(t *testing.T) {
	src := &manyFake{fakeSource: newFakeSource()}
	vecs, emb := &fakeVectors{}, &conceptEmbedder{}
	r := newTestRegistry(t, src, Options{Logger: slog.New(slog.DiscardHandler),
		Meaning: MeaningOptions{Embedder: emb, Vectors: vecs}})
	emb.fix("vector probe", 1, 0, 0)
	for i := range 4 {
		slug := fmt.Sprintf("m%d", i)
		v := src.put(projA, slug, slug, fmt.Sprintf("unrelated words %d", i))
		refresh(t, r, projA, slug)
		mv := memory.Vector{Project: projA, Slug: slug, Version: v.Version, Model: testModel, Values: []float32{1, float32(i) / 10, 0}}
		vecs.store(mv)
		r.OnStored([]memory.Vector{mv})
	}
	src.forget(projA, "m3") // committed, not yet queued: its vector is still there
	src.mu.Lock()
	src.many, src.latest, src.gets = 0, 0, 0
	src.mu.Unlock()
	hits, err := r.SearchProjects(testCtx(t), []memory.ProjectRef{projA}, memory.SearchQuery{Text: "vector probe"})
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(hits); !slices.Equal(got, []string{"m0:meaning", "m1:meaning", "m2:meaning"}) {
		t.Errorf("hits %v, want m0 m1 m2 by meaning (m3 forgotten)", got)
	}
	if src.many != 1 || src.latest != 0 || src.gets != 0 {
		t.Errorf("reads: %d LatestMany, %d Latest, %d Get; want 1 LatestMany", src.many, src.latest, src.gets)
	}
}
