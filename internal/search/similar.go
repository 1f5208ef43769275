package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"munin/internal/memory"
	"munin/internal/search/text"
	"munin/internal/search/vector"
)

// A warning before a duplicate. When an agent writes a new slug whose text
// says what an existing entry already says, its answer names that entry, so
// the agent can update it instead of keeping two. Similar finds those
// entries in two steps:
//
//  1. one bounded keyword search: of the new text's first
//     memory.MaxQueryTerms distinct words (the title's first), the
//     similarSearchWords that the fewest entries use, searched in the
//     content of the project's entries (BM25, no expansions); the best
//     similarCandidates entries;
//  2. each candidate, read from the Source in one statement, is scored by
//     the words the two texts share (Score, below); those at or above
//     SimilarThreshold are kept, best first, at most memory.MaxSimilar.
//
// With meaning search on, the entries whose vectors are most like the new
// text are candidates too (vector.Meaning.Near, which says what it costs
// and when it calls nothing); their score is the higher of the word score
// and the cosine similarity, kept at or above the model's threshold
// (--embed-similar-min). The vector of the new entry itself is made later,
// off the write path, by the embedding worker. Only the project's own
// index and vectors are searched, so a hint never names an entry of
// another project (invariant 7,
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
// copy; a candidate sharing fewer than similarMinShared words scores 0,
// since a few words are shared by chance.

// Bounds and thresholds of Similar; see the measurement in
// internal/search/quality/similar_test.go, which chose them.
const (
	// SimilarThreshold is the least score of a hint by words.
	SimilarThreshold = 0.65
	// similarMinShared is the least number of shared words of a hint.
	similarMinShared = 4
	// similarSearchWords is how many of the new text's words the keyword
	// search looks for: its rarest.
	similarSearchWords = 8
	// similarCandidates is how many entries the keyword search hands to the
	// scoring.
	similarCandidates = 5
	// similarField is the field the keyword search looks in: the content
	// (an entry's title usually repeats words of it). Each more field is as
	// many more term searches, and their postings are the search's cost
	// (BenchmarkRememberSimilar10k).
	similarField = text.FieldContent
	// similarMeaningSpare is how many more vectors than memory.MaxSimilar
	// the meaning half asks for.
	similarMeaningSpare = 5
)

// Similar returns the live entries of ref whose text closely matches text
// (a new entry's title and content), best first, at most memory.MaxSimilar,
// each with its score (see above). The caller asks for a new slug only
// (its first version was just written, or a proposal for it made); the slug
// itself is never among the answers.
func (r *Registry) Similar(ctx context.Context, ref memory.ProjectRef, slug, txt string) ([]memory.Similar, error) {
	mine := text.Analyze(txt).Seq
	var cands []string
	if len(mine) > 0 {
		var err error
		if cands, err = r.similarByWords(ctx, ref, mine); err != nil {
			return nil, err
		}
	}
	near := r.similarByMeaning(ctx, ref, txt)
	for s := range near {
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
		if h, isNear := near[s]; isNear && (!ok || v.Deleted) {
			r.meaning.Forget(h) // as a recall does: it would keep a live entry's place
		}
		if !ok || v.Deleted || v.Stale(now) {
			continue
		}
		score := Score(mine, text.Analyze(v.Title+"\n"+v.Content).Seq)
		if score < SimilarThreshold {
			score = 0
		}
		if h, isNear := near[s]; isNear {
			score = max(score, float64(h.Sim))
		}
		if score > 0 {
			out = append(out, memory.Similar{Slug: s, Title: v.Title, Score: roundScore(score)})
		}
	}
	slices.SortStableFunc(out, func(a, b memory.Similar) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Slug, b.Slug))
	})
	return out[:min(len(out), memory.MaxSimilar)], nil
}

// similarByMeaning returns the vectors of ref like txt by slug
// (vector.Meaning.Near), none without the meaning path. It asks for
// similarMeaningSpare more than the hint names, since some may turn out
// forgotten or stale. A failure only leaves the hint to the words: it is
// counted and logged as the meaning path's.
func (r *Registry) similarByMeaning(ctx context.Context, ref memory.ProjectRef, txt string) map[string]vector.Hit {
	if r.meaning == nil {
		return nil
	}
	near, err := r.meaning.Near(ctx, ref, txt, memory.MaxSimilar+similarMeaningSpare)
	if err != nil {
		r.meaning.Fail("duplicate hint by words only", err, "project", ref.String())
		return nil
	}
	out := make(map[string]vector.Hit, len(near))
	for _, h := range near {
		out[h.Slug] = h
	}
	return out
}

// similarByWords runs the keyword search of Similar: the slugs of the best
// similarCandidates entries for the rarest words of mine.
func (r *Registry) similarByWords(ctx context.Context, ref memory.ProjectRef, mine []text.Word) ([]string, error) {
	p, err := r.project(ref)
	if err != nil {
		return nil, err
	}
	// Read-your-writes: an entry written just before is found.
	idx, release, err := p.Ready(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	stems, err := rarest(idx, mine)
	if err != nil || len(stems) == 0 {
		return nil, err
	}
	// A plain disjunction, not a recall's ranking (package rank): it weighs
	// title matches four times, which a restatement under another title
	// does not share, and would look in three fields.
	dq := bleve.NewDisjunctionQuery()
	for _, st := range stems {
		tq := bleve.NewTermQuery(st)
		tq.SetField(similarField)
		dq.AddQuery(tq)
	}
	res, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(dq, similarCandidates, 0, false))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("similar %s: %w", ref, ctxErr)
		}
		return nil, memory.Internal(fmt.Errorf("similar %s: search: %w", ref, err))
	}
	ms := res.Hits
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out, nil
}

// rarest returns the stems of the similarSearchWords words of mine that the
// fewest entries of idx use in their content, of its first
// memory.MaxQueryTerms words (the title's lead), leaving out words no entry
// uses. A search's cost is the postings it walks: the common words of a
// text match most entries and cost the search several times over
// (BenchmarkRememberSimilar10k), while a duplicate shares the rare words
// too, and they rank it first.
//
// The counts are read from the content dictionary of each segment of the
// index snapshot, opened once for all words (as rank's vocabulary does):
// bleve's TermFieldReader opens every segment's dictionary again per term,
// most of the cost at 10,000 entries. They include entries deleted since
// the segment was written, which is precise enough for rarity. An index
// other than scorch has no segments to read: the first words are taken.
func rarest(idx bleve.Index, mine []text.Word) ([]string, error) {
	mine = mine[:min(len(mine), memory.MaxQueryTerms)]
	adv, err := idx.Advanced()
	if err != nil {
		return nil, memory.Internal(fmt.Errorf("similar: %w", err))
	}
	rd, err := adv.Reader()
	if err != nil {
		return nil, memory.Internal(fmt.Errorf("similar: open reader: %w", err))
	}
	defer rd.Close()
	snap, ok := rd.(*scorch.IndexSnapshot)
	if !ok {
		mine = mine[:min(len(mine), similarSearchWords)]
		stems := make([]string, len(mine))
		for i, w := range mine {
			stems[i] = w.Stems[0]
		}
		return stems, nil
	}
	var dicts []segment.TermDictionary
	for _, seg := range snap.Segments() {
		d, err := seg.Segment().Dictionary(similarField)
		if err != nil {
			return nil, memory.Internal(fmt.Errorf("similar: open dictionary: %w", err))
		}
		dicts = append(dicts, d)
	}
	type counted struct {
		stem string
		df   uint64
	}
	var ws []counted
	for _, w := range mine {
		// The first stem (the English one) stands for the word: an entry
		// with the word has both its stems, and one term per word halves
		// the lookups and the search. (A form with another English stem,
		// "Datenbanken" for "Datenbank", misses on this word; the other
		// words find the entry, and the score compares both stems.)
		stem := w.Stems[0]
		if slices.ContainsFunc(ws, func(c counted) bool { return c.stem == stem }) {
			continue
		}
		var df uint64
		for _, d := range dicts {
			pl, err := d.PostingsList([]byte(stem), nil, nil)
			if err != nil {
				return nil, memory.Internal(fmt.Errorf("similar: read term %q: %w", stem, err))
			}
			df += pl.Count()
		}
		if df > 0 {
			ws = append(ws, counted{stem, df})
		}
	}
	slices.SortStableFunc(ws, func(a, b counted) int { return cmp.Compare(a.df, b.df) })
	stems := make([]string, 0, similarSearchWords)
	for _, w := range ws[:min(len(ws), similarSearchWords)] {
		stems = append(stems, w.stem)
	}
	return stems, nil
}

// Score is Similar's word score of a new text's words against an entry's
// (see the comment at the top of similar.go): the share of mine that theirs
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
