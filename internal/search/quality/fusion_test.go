package quality

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// vectorRanker ranks the corpus by the stand-in embedder alone: every note
// by cosine to the query, as an exact vector search would.
type vectorRanker struct {
	emb   conceptEmbedder
	slugs []string
	vecs  [][]float32
}

func newVectorRanker(notes []note, emb conceptEmbedder) *vectorRanker {
	vr := &vectorRanker{emb: emb, slugs: make([]string, len(notes))}
	texts := make([]string, len(notes))
	for i, n := range notes {
		vr.slugs[i] = n.slug
		// What a vector is computed from: title, tags and content.
		texts[i] = n.title + "\n" + strings.Join(n.tags, " ") + "\n" + n.content
	}
	vr.vecs, _ = emb.Embed(context.Background(), texts)
	return vr
}

// rank returns the first recallLimit slugs by cosine to text, best first
// (ties by slug, so the order is the same on every run).
func (vr *vectorRanker) rank(text string) []string {
	qv, _ := vr.emb.Embed(context.Background(), []string{text})
	order := make([]int, len(vr.slugs))
	for i := range order {
		order[i] = i
	}
	cos := make([]float64, len(vr.slugs))
	for i, v := range vr.vecs {
		cos[i] = cosine(qv[0], v)
	}
	sort.SliceStable(order, func(a, b int) bool {
		ia, ib := order[a], order[b]
		if cos[ia] != cos[ib] {
			return cos[ia] > cos[ib]
		}
		return vr.slugs[ia] < vr.slugs[ib]
	})
	out := make([]string, 0, recallLimit)
	for _, i := range order[:min(recallLimit, len(order))] {
		out = append(out, vr.slugs[i])
	}
	return out
}

// score scores the queries of kind by the vectors alone.
func (vr *vectorRanker) score(qs []query, kind string) score {
	var sc score
	for _, q := range qs {
		if q.kind == kind {
			sc.add(rankOf(vr.rank(q.text), q.want))
		}
	}
	return sc
}

// rrf fuses ranked lists by reciprocal rank: each slug scores the sum of
// 1/(k+rank) over the lists it is in; ties by first appearance.
func rrf(k float64, lists ...[]string) []string {
	score := map[string]float64{}
	var order []string
	for _, l := range lists {
		for i, s := range l {
			if _, seen := score[s]; !seen {
				order = append(order, s)
			}
			score[s] += 1 / (k + float64(i+1))
		}
	}
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return 0
	})
	return order[:min(recallLimit, len(order))]
}

// tiered keeps the keyword hits first and appends the vector hits not
// among them: meaning can add hits but never displace a keyword hit.
func tiered(keyword, vector []string) []string {
	out := slices.Clone(keyword)
	for _, s := range vector {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out[:min(recallLimit, len(out))]
}

// fusionPreview is printed while search has no meaning path: the keyword
// hits recall gave for every query, fused offline with the stand-in's
// vector ranking by reciprocal-rank fusion (k=60) and by tiers. It shows
// what fusion may cost the keyword kinds and gain for paraphrases, before
// it is built; the stand-in is no model, so the numbers are a preview of
// the method on this corpus, not of a real meaning path.
func fusionPreview(t testing.TB, s *stack, qs []query, keyword map[int][]string, vr *vectorRanker) string {
	t.Helper()
	methods := []struct {
		name string
		fuse func(kw, vec []string) []string
	}{
		{"keywords", func(kw, _ []string) []string { return kw }},
		{"RRF k=60", func(kw, vec []string) []string { return rrf(60, kw, vec) }},
		{"tiered", tiered},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fusion preview (keyword hits of recall + the stand-in's vector ranking, fused offline), hit@1/hit@5/MRR:\n")
	fmt.Fprintf(&b, "  %-16s", "kind")
	for _, m := range methods {
		fmt.Fprintf(&b, " %-18s", m.name)
	}
	b.WriteString("\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-16s", k)
		for _, m := range methods {
			var sc score
			for _, q := range qs {
				if q.kind != k {
					continue
				}
				kw, ok := keyword[q.line]
				if !ok {
					kw = s.recall(t, q.text) // a meaning-only kind was not recalled above
				}
				sc.add(rankOf(m.fuse(kw, vr.rank(q.text)), q.want))
			}
			h1, h5, mrr := sc.values()
			fmt.Fprintf(&b, " %.2f/%.2f/%.2f     ", h1, h5, mrr)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestFusion pins the two fusions of the preview: RRF ranks a slug found
// by both lists above slugs found by one, and tiers never move a keyword
// hit down.
func TestFusion(t *testing.T) {
	kw, vec := []string{"a", "b", "c"}, []string{"d", "c", "a"}
	if got := rrf(60, kw, vec); !slices.Equal(got[:2], []string{"a", "c"}) {
		t.Errorf("rrf = %v, want a and c first", got)
	}
	if got := tiered(kw, vec); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("tiered = %v, want a b c d", got)
	}
}
