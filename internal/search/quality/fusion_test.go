package quality

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"munin/internal/search"
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

// tiered keeps the keyword hits first and appends the vector hits not
// among them: meaning can add hits but never displace a keyword hit. Search
// does not fuse so; TestRecallFusion measures it offline beside RRF.
func tiered(keyword, vector []string) []string {
	out := slices.Clone(keyword)
	for _, s := range vector {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out[:min(recallLimit, len(out))]
}

// fusionSetups are the settings of reciprocal-rank fusion TestRecallFusion
// compares: its k (search.DefaultRRFK 60 against smaller ones, which let
// the first ranks of one path weigh more), the depth each path gives
// (search.DefaultFuseDepth 20 against 50, and 10, the recall's limit), and
// a least cosine similarity for a meaning hit (on the stand-in's scale,
// which is no real model's).
var fusionSetups = func() []setup {
	var out []setup
	for _, depth := range []int{search.DefaultFuseDepth, 50, recallLimit} {
		for _, k := range []int{search.DefaultRRFK, 20, 10} {
			out = append(out, setup{name: fmt.Sprintf("RRF k=%d d=%d", k, depth), meaning: true, rrfK: k, fuseDepth: depth})
		}
	}
	for _, sim := range []float32{0.2, 0.3, 0.4, 0.5} {
		out = append(out, setup{name: fmt.Sprintf("RRF k=60 d=20 s>%.1f", sim), meaning: true, minSim: sim})
	}
	return out
}()

// TestRecallFusion measures the fusion alternatives on the benchmark: recall
// by words alone, recall with meaning under each of fusionSetups, and,
// offline, the keyword hits with the stand-in's vector ranking appended
// (tiered). It prints hit@1/hit@5/MRR per kind and fails if a setting finds
// paraphrases no better than words alone: then meaning adds nothing. The
// stand-in is no model; the comparison is of the fusion on this corpus.
func TestRecallFusion(t *testing.T) {
	if meaning == nil {
		t.Skip("no meaning path")
	}
	if testing.Short() || raceEnabled {
		t.Skip("measures many setups; not with -short or -race")
	}
	notes, qs := loadNotes(t), loadQueries(t)
	words := measure(t, wordsOnly, notes, qs)
	vr := newVectorRanker(notes, conceptEmbedder{})
	type column struct {
		name   string
		scores map[string]*score
	}
	cols := []column{{wordsOnly.name, words.scores}}
	tiers := map[string]*score{}
	for _, k := range kinds {
		tiers[k] = &score{}
	}
	for _, q := range qs {
		tiers[q.kind].add(rankOf(tiered(words.got[q.line], vr.rank(q.text)), q.want))
	}
	for _, su := range fusionSetups {
		r := measure(t, su, notes, qs)
		cols = append(cols, column{su.name, r.scores})
		if r.scores[kindParaphrase].rr <= words.scores[kindParaphrase].rr {
			t.Errorf("%s: paraphrase %s, words alone %s: meaning adds nothing", su.name,
				r.scores[kindParaphrase].text(), words.scores[kindParaphrase].text())
		}
	}
	cols = append(cols, column{"tiered (offline)", tiers})

	var b strings.Builder
	b.WriteString("fusion settings, hit@1/hit@5/MRR per kind (stand-in embedder; d: FuseDepth, s: MinSimilarity):\n")
	fmt.Fprintf(&b, "  %-22s", "setting")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %-15s", k)
	}
	b.WriteString("\n")
	for _, c := range cols {
		fmt.Fprintf(&b, "  %-22s", c.name)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %-15s", c.scores[k].text())
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}

// TestFusion pins the offline tiering: it never moves a keyword hit down.
func TestFusion(t *testing.T) {
	kw, vec := []string{"a", "b", "c"}, []string{"d", "c", "a"}
	if got := tiered(kw, vec); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("tiered = %v, want a b c d", got)
	}
}
