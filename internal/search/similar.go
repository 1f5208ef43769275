package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"munin/internal/memory"
	"munin/internal/search/rank"
	"munin/internal/search/text"
	"munin/internal/search/vector"
)

// A warning before a duplicate. When an agent writes a new slug whose text
// says what an existing entry already says, its answer names that entry, so
// the agent can update it instead of keeping two. Similar finds those
// entries in two steps:
//
//  1. one bounded keyword search: the new text's first memory.MaxQueryTerms
//     distinct words (the title's first) ranked over the project's index
//     like a recall without expansions, the best similarCandidates entries;
//  2. each candidate, read from the Source in one statement, is scored by
//     the words the two texts share (Score, below); those at or above
//     SimilarThreshold are kept, best first, at most memory.MaxSimilar.
//
// With the meaning path on, the new text is also embedded and the project's
// nearest vectors at or above SimilarMeaningThreshold cosine similarity are
// candidates too. Only the project's own index and vectors are searched, so
// a hint never names an entry of another project (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
//
// The score of a candidate is the share of the new text's words that the
// entry already has: its distinct words after analysis (function words of
// either language dropped), a word counting as present when the entry has
// one of its English or German stems. 1 means every word of the new text is
// in the entry, 0.7 that seven in ten are. It is the containment of the new
// text in the entry, not a symmetric measure, so that a shortened or
// partial restatement of a long entry (the common duplicate: an agent
// writes down again one fact of a longer note) scores as high as a full
// copy; a text of fewer than similarMinShared shared words scores 0, since
// a few words are shared by chance. A meaning candidate scores the larger
// of that and its cosine similarity.

// Bounds and thresholds of Similar; see the measurement in
// internal/search/quality/similar_test.go, which chose them.
const (
	// SimilarThreshold is the least score of a hint by words.
	SimilarThreshold = 0.65
	// similarMinShared is the least number of shared words of a hint.
	similarMinShared = 4
	// SimilarMeaningThreshold is the least cosine similarity of a hint by
	// meaning.
	SimilarMeaningThreshold = 0.9
	// similarCandidates is how many entries the keyword search hands to the
	// scoring (and the meaning search at most adds).
	similarCandidates = 8
	// similarMeaningWait bounds the embedding of the new text: a slow
	// endpoint must not hold up a remember; without it the hint is by words.
	similarMeaningWait = 500 * time.Millisecond
)

// Similar returns the live entries of ref whose text closely matches text
// (a new entry's title and content), best first, at most memory.MaxSimilar,
// each with its score (see above). It answers nothing when slug already
// has a version, tombstones included: the write is an update, not a new
// entry. The slug itself is never among the answers.
func (r *Registry) Similar(ctx context.Context, ref memory.ProjectRef, slug, txt string) ([]memory.Similar, error) {
	if _, err := r.src.Latest(ctx, ref, slug); err == nil {
		return nil, nil
	} else if me := (*memory.Error)(nil); !errors.As(err, &me) || me.Code != memory.CodeNotFound {
		return nil, fmt.Errorf("similar %s: read %s: %w", ref, slug, err)
	}
	mine := text.Analyze(txt).Seq
	if len(mine) == 0 {
		return nil, nil
	}
	cands, err := r.similarByWords(ctx, ref, mine)
	if err != nil {
		return nil, err
	}
	sense := r.similarByMeaning(ctx, ref, txt)
	for s := range sense {
		if !slices.Contains(cands, s) {
			cands = append(cands, s)
		}
	}
	cands = slices.DeleteFunc(cands, func(s string) bool { return s == slug })
	if len(cands) == 0 {
		return nil, nil
	}
	latest, err := r.src.LatestMany(ctx, ref, cands)
	if err != nil {
		return nil, fmt.Errorf("similar %s: read candidates: %w", ref, err)
	}
	now := time.Now()
	var out []memory.Similar
	for _, s := range cands {
		v, ok := latest[s]
		if !ok || v.Deleted || v.Stale(now) {
			continue
		}
		score := Score(mine, text.Analyze(v.Title+"\n"+v.Content).Seq)
		if cos, ok := sense[s]; ok && cos >= SimilarMeaningThreshold {
			score = max(score, cos)
		}
		if score >= SimilarThreshold {
			out = append(out, memory.Similar{Slug: s, Title: v.Title, Score: roundScore(score)})
		}
	}
	slices.SortStableFunc(out, func(a, b memory.Similar) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Slug, b.Slug))
	})
	return out[:min(len(out), memory.MaxSimilar)], nil
}

// similarByWords runs the keyword search of Similar: the slugs of the best
// similarCandidates entries for the distinctive words of mine.
func (r *Registry) similarByWords(ctx context.Context, ref memory.ProjectRef, mine []text.Word) ([]string, error) {
	// The first words: the title's lead, and a text's opening usually names
	// its subject. In the measurement of internal/search/quality every
	// near-duplicate that scores above the threshold is among the
	// candidates they find, so no costlier choice (by rarity: a dictionary
	// lookup per word) was needed.
	picked := mine[:min(len(mine), memory.MaxQueryTerms)]
	stems := make([]string, 0, 2*len(picked))
	seen := map[string]bool{}
	for _, w := range picked {
		for _, s := range w.Stems {
			if !seen[s] {
				seen[s] = true
				stems = append(stems, s)
			}
		}
	}
	// Ranked like a recall (read-your-writes included: an entry written just
	// before is found), over at most memory.MaxQueryTerms words. Without
	// the words' sequence (Terms.Seq) the ranking has no compounds or typos
	// to expand: they would cost more searches, and the scoring below
	// compares word forms only.
	ms, err := r.rankOne(ctx, ref, recall{Query: rank.Query{
		Terms: text.Terms{ByAnalyzer: map[string][]string{text.AnalyzerEN: stems}},
		Limit: similarCandidates,
	}})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.DM.ID
	}
	return out, nil
}

// similarByMeaning returns the project's entries nearest to txt by meaning
// with their cosine similarity, when the meaning path is on. Its failures
// leave the hint to the words: they are counted and logged like a recall's.
// The vector is asked of the embedder directly, not through the query
// cache, which a text written once would only crowd.
func (r *Registry) similarByMeaning(ctx context.Context, ref memory.ProjectRef, txt string) map[string]float64 {
	if r.meaning == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, similarMeaningWait)
	defer cancel()
	vs, err := r.opts.Meaning.Embedder.Embed(ctx, []string{txt})
	if err != nil || len(vs) != 1 {
		r.meaning.Fail("similar answers by words only", cmp.Or(err, fmt.Errorf("%d vectors for 1 text", len(vs))))
		return nil
	}
	q, ok := vector.Normalized(vs[0])
	if !ok {
		r.meaning.Fail("similar answers by words only", errors.New("empty, zero or not finite vector"))
		return nil
	}
	idx, err := r.meaning.Index(ctx, ref)
	if err != nil {
		r.meaning.Fail("similar answers by words only", err, "project", ref.String())
		return nil
	}
	near, _ := idx.TopK(q, similarCandidates, SimilarMeaningThreshold)
	out := make(map[string]float64, len(near))
	for _, n := range near {
		out[n.Slug] = float64(n.Sim)
	}
	return out
}

// Score is Similar's word score of a new text's words against an entry's
// (see the package comment of similar.go): the share of mine that theirs
// has, 0 below similarMinShared shared words.
func Score(mine, theirs []text.Word) float64 {
	n := shared(mine, stemSet(theirs))
	if n < similarMinShared {
		return 0
	}
	return float64(n) / float64(len(mine))
}

func stemSet(ws []text.Word) map[string]bool {
	out := make(map[string]bool, 2*len(ws))
	for _, w := range ws {
		for _, s := range w.Stems {
			out[s] = true
		}
	}
	return out
}

// shared counts the words of ws with a stem in set.
func shared(ws []text.Word, set map[string]bool) int {
	n := 0
	for _, w := range ws {
		for _, s := range w.Stems {
			if set[s] {
				n++
				break
			}
		}
	}
	return n
}

// roundScore keeps two decimals: the score is a hint, not a measurement.
func roundScore(s float64) float64 { return float64(int(s*100+0.5)) / 100 }
