package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

var (
	projSmall = memory.ProjectRef{Workspace: "ws", Project: "small"}
	projBig   = memory.ProjectRef{Workspace: "ws", Project: "big"}
)

// fillerWords never occur in a query of these tests.
var fillerWords = strings.Fields(`river stone cloud paper garden window yellow silver market bridge
forest candle harbor meadow pencil rocket saddle timber valley wagon anchor basket copper desert`)

// filler is n filler words, starting at the i-th.
func filler(i, n int) string {
	w := make([]string, n)
	for j := range w {
		w[j] = fillerWords[(i+j)%len(fillerWords)]
	}
	return strings.Join(w, " ")
}

func searchAll(t testing.TB, r *Registry, refs []memory.ProjectRef, q memory.SearchQuery) []memory.Hit {
	t.Helper()
	hits, err := r.SearchProjects(testCtx(t), refs, q)
	if err != nil {
		t.Fatalf("search %q in %v: %v", q.Text, refs, err)
	}
	return hits
}

// rankOf is the position of slug from ref in hits, or -1.
func rankOf(hits []memory.Hit, ref memory.ProjectRef, slug string) int {
	return slices.IndexFunc(hits, func(h memory.Hit) bool { return h.Project == ref && h.Slug == slug })
}

// TestSearchProjectsRanksAcrossProjectSizes: a strong match outranks a weak
// one whichever of a project of 10 entries and one of 10,000 holds it. Per
// index, a word's weight depends on how rare it is in that index: kafka,
// in half the small project, weighs little there and a lot in the big one,
// where one entry mentions it; postgres the other way round. Merging each
// project's own scores puts both weak matches first.
func TestSearchProjectsRanksAcrossProjectSizes(t *testing.T) {
	src := newFakeSource()
	src.Put(projSmall, "small-strong", "Retention", "kafka kafka kafka retention")
	for i := range 4 {
		src.Put(projSmall, fmt.Sprintf("small-mention-%d", i), "Note", filler(i, 8)+" kafka")
	}
	src.Put(projSmall, "small-weak", "Note", filler(7, 8)+" postgres")
	for i := range 4 {
		src.Put(projSmall, fmt.Sprintf("other-%d", i), "Note", filler(i, 8))
	}
	src.Put(projBig, "big-strong", "Tuning", "postgres postgres postgres tuning")
	src.Put(projBig, "big-weak", "Note", filler(3, 12)+" kafka")
	for i := range 9998 {
		c := filler(i, 12)
		if i%2 == 0 {
			c += " postgres"
		}
		src.Put(projBig, fmt.Sprintf("big-%05d", i), "Note", c)
	}
	// Building 10,000 entries takes about 0.5 s, 5-10 s under -race: more
	// than testCtx allows on a busy machine.
	r := newTestRegistry(t, src, Options{IndexWait: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.Search(ctx, projBig, memory.SearchQuery{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	both := []memory.ProjectRef{projBig, projSmall}

	kafka := searchAll(t, r, both, memory.SearchQuery{Text: "kafka"})
	if got := rankOf(kafka, projSmall, "small-strong"); got != 0 {
		t.Errorf("kafka: strong match of the small project at %d, want 0; hits %v", got, describe(kafka))
	}
	if got := rankOf(kafka, projBig, "big-weak"); got <= 0 {
		t.Errorf("kafka: weak match of the big project at %d, want found below the strong one; hits %v", got, describe(kafka))
	}
	pg := searchAll(t, r, both, memory.SearchQuery{Text: "postgres", Limit: MaxLimit})
	if got := rankOf(pg, projBig, "big-strong"); got != 0 {
		t.Errorf("postgres: strong match of the big project at %d, want 0; hits %v", got, describe(pg))
	}
	if got := rankOf(pg, projSmall, "small-weak"); got != 1 {
		t.Errorf("postgres: weak match of the small project at %d, want 1 (above the big project's weaker mentions); hits %v", got, describe(pg))
	}
}

func describe(hits []memory.Hit) []string {
	out := make([]string, 0, min(len(hits), 8))
	for _, h := range hits[:min(len(hits), 8)] {
		out = append(out, fmt.Sprintf("%s:%s=%.4f", h.Project.Project, h.Slug, h.Score))
	}
	return out
}

// TestSearchProjectsScoresAsOneIndex: the scores of a recall over two
// projects are those of one index holding the entries of both.
func TestSearchProjectsScoresAsOneIndex(t *testing.T) {
	union := memory.ProjectRef{Workspace: "ws", Project: "union"}
	src := newFakeSource()
	rng := rand.New(rand.NewPCG(3, 4))
	words := append(slices.Clone(searchtest.BenchWords), "kafka", "postgres", "retention", "kafka", "Kafka")
	tags := []string{"db", "ops", "adr"}
	put := func(ref memory.ProjectRef, n int) {
		for i := range n {
			var b strings.Builder
			for range 5 + rng.IntN(60) {
				b.WriteString(words[rng.IntN(len(words))] + " ")
			}
			title := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
			tt := []string{tags[rng.IntN(len(tags))]}
			slug := fmt.Sprintf("%s-%d", ref.Project, i)
			src.Put(ref, slug, title, b.String(), tt...)
			src.Put(union, slug, title, b.String(), tt...)
		}
	}
	put(projA, 30)
	put(projB, 700)
	r := newTestRegistry(t, src, Options{})
	for _, q := range []memory.SearchQuery{
		{Text: "kafka"},
		{Text: "kafka retention postgres", Limit: MaxLimit},
		{Text: "Datenbank Entscheidung replication", Limit: MaxLimit},
		{Text: "Sicherung backup", Tags: []string{"db"}, Limit: MaxLimit},
		// More than ten terms per field: bleve's heap disjunction.
		{Text: "kafka retention postgres index database decision latency throughput replication backup restore cluster", Limit: MaxLimit},
		{Text: "nosuchword"},
	} {
		got := searchAll(t, r, []memory.ProjectRef{projA, projB}, q)
		want, err := r.Search(testCtx(t), union, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d hits over two projects, %d in one index", q.Text, len(got), len(want))
		}
		byslug := map[string]float64{}
		for _, h := range want {
			byslug[h.Slug] = h.Score
		}
		for i, h := range got {
			if !near(h.Score, want[i].Score) {
				t.Errorf("%q: score %d is %v over two projects, %v in one index", q.Text, i, h.Score, want[i].Score)
			}
			if s, ok := byslug[h.Slug]; ok && !near(h.Score, s) {
				t.Errorf("%q: %s scores %v over two projects, %v in one index", q.Text, h.Slug, h.Score, s)
			}
			if wantRef := map[bool]memory.ProjectRef{true: projA, false: projB}[strings.HasPrefix(h.Slug, projA.Project)]; h.Project != wantRef {
				t.Errorf("%q: %s carries project %s, want %s", q.Text, h.Slug, h.Project, wantRef)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestSearchProjectsOneRefIsSearch: over one project, SearchProjects answers
// exactly what Search does, and both name the project in every hit.
func TestSearchProjectsOneRefIsSearch(t *testing.T) {
	src := newFakeSource()
	fillSource(src, projA, 200)
	r := newTestRegistry(t, src, Options{})
	for _, q := range []memory.SearchQuery{{Text: "Datenbank"}, {Text: "replication latency", Limit: 30, Tags: []string{"db"}}} {
		one := find(t, r, projA, q.Text, q.Tags...)
		if q.Limit != 0 {
			var err error
			if one, err = r.Search(testCtx(t), projA, q); err != nil {
				t.Fatal(err)
			}
		}
		got := searchAll(t, r, []memory.ProjectRef{projA}, q)
		if len(one) == 0 || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", one) {
			t.Fatalf("%q: SearchProjects %v, Search %v", q.Text, describe(got), describe(one))
		}
		for _, h := range got {
			if h.Project != projA {
				t.Fatalf("%q: hit %s carries project %q, want %s", q.Text, h.Slug, h.Project, projA)
			}
		}
	}
}

// TestSearchProjectsLimitsTheMergedList: the limit is applied to the merged
// list, which holds the best hits of all projects, best first.
func TestSearchProjectsLimitsTheMergedList(t *testing.T) {
	src := newFakeSource()
	for i := range 12 {
		// Longer content scores lower: A holds the best and the worst.
		src.Put(projA, fmt.Sprintf("a%02d", i), "Note", strings.Repeat("river ", 2*i)+"kafka")
		src.Put(projB, fmt.Sprintf("b%02d", i), "Note", strings.Repeat("river ", 2*i+1)+"kafka")
	}
	r := newTestRegistry(t, src, Options{})
	both := []memory.ProjectRef{projA, projB}
	for _, c := range []struct{ limit, want int }{{0, DefaultLimit}, {7, 7}, {1, 1}, {MaxLimit + 5, 24}} {
		hits := searchAll(t, r, both, memory.SearchQuery{Text: "kafka", Limit: c.limit})
		if len(hits) != c.want {
			t.Fatalf("limit %d: %d hits, want %d", c.limit, len(hits), c.want)
		}
		for i, h := range hits {
			wantRef, wantSlug := projA, fmt.Sprintf("a%02d", i/2)
			if i%2 == 1 {
				wantRef, wantSlug = projB, fmt.Sprintf("b%02d", i/2)
			}
			if h.Project != wantRef || h.Slug != wantSlug {
				t.Fatalf("limit %d: hit %d is %s %s, want %s %s (best first across projects); hits %v",
					c.limit, i, h.Project, h.Slug, wantRef, wantSlug, describe(hits))
			}
		}
	}
}

// TestSearchProjectsFiltersTagsInEveryProject: tags restrict the hits of
// every project searched.
func TestSearchProjectsFiltersTagsInEveryProject(t *testing.T) {
	src := newFakeSource()
	for _, ref := range []memory.ProjectRef{projA, projB, projSmall} {
		src.Put(ref, "tagged", "Kafka", "kafka retention", "db", "ops")
		src.Put(ref, "half", "Kafka", "kafka retention", "db")
		src.Put(ref, "untagged", "Kafka", "kafka retention")
	}
	r := newTestRegistry(t, src, Options{})
	refs := []memory.ProjectRef{projA, projB, projSmall}
	hits := searchAll(t, r, refs, memory.SearchQuery{Text: "kafka", Tags: []string{"db", "ops"}})
	if len(hits) != 3 {
		t.Fatalf("hits %v, want the entry tagged db and ops of each of the 3 projects", describe(hits))
	}
	for _, ref := range refs {
		if rankOf(hits, ref, "tagged") < 0 {
			t.Errorf("no tagged hit of %s: %v", ref, describe(hits))
		}
	}
	if got := searchAll(t, r, refs, memory.SearchQuery{Text: "kafka", Tags: []string{"nosuchtag"}}); len(got) != 0 {
		t.Fatalf("unknown tag: %v, want no hits", describe(got))
	}
}
