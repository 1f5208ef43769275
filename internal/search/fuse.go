package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"munin/internal/memory"
	"munin/internal/search/rank"
	"munin/internal/search/text"
	"munin/internal/search/vector"
)

// Fusion of the two paths of a recall. The keyword hits (ranked by TF-IDF,
// read-your-writes) and the meaning hits (ranked by cosine similarity, as far
// as the vectors have caught up) are merged by reciprocal-rank fusion: a hit
// scores 1/(k+rank) on each path that found it, and the sums rank the list.
// Ranks, not scores, are fused because the two scores share no scale; a hit
// both paths found near the top beats one that only one path ranks first.
//
// Each path gives max(limit, FuseDepth) candidates, so a hit just below the
// limit on both paths can still rise into it. Score is the fused sum scaled
// by (k+1)/2: 1 for a hit ranked first on both paths, 0.5 for one ranked
// first on one path only; it orders the hits of one answer, nothing more.

// fusedHit is one candidate of the fusion. A keyword candidate holds its
// match and is read from the Source only if it makes the answer; a
// meaning-only candidate was read to check it is live and holds its hit.
type fusedHit struct {
	m            *rank.Match
	hit          memory.Hit
	content      string // a meaning-only candidate's content, for its snippet if it is kept
	words, sense int    // 1-based rank on each path, 0 if not found there
	score        float64
}

// searchFused is one pass of SearchProjects with the meaning path on: the
// best fetch hits, stale ones marked (stale.go); full tells whether the
// candidates filled fetch (so that a deeper pass may find more).
func (r *Registry) searchFused(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery, fetch int) (hits []memory.Hit, full bool, err error) {
	m := r.meaning
	limit := fetch
	depth := max(limit, m.FuseDepth())
	rc, words, err := r.rankWords(ctx, refs, q, depth)
	if err != nil {
		return nil, false, err // invalid queries and unavailable indexes answer as without meaning
	}
	near, err := m.Search(ctx, refs, q.Text, depth)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, false, fmt.Errorf("search: %w", ctxErr)
		}
		m.Fail("recall answers by words only", err)
	}
	if err != nil || len(near) == 0 {
		// Nothing to fuse: the keyword answer as it is.
		hits, err := r.hitsAt(ctx, rc.text, words[:min(len(words), limit)], q.At)
		return hits, len(words) >= limit, err
	}
	cands, err := r.fuseCandidates(ctx, words, near, q)
	if err != nil {
		return nil, false, err
	}
	k := float64(m.RRFK())
	for i := range cands {
		c := &cands[i]
		for _, rank := range []int{c.words, c.sense} {
			if rank > 0 {
				c.score += (k + 1) / (2 * (k + float64(rank)))
			}
		}
		switch {
		case c.words > 0 && c.sense > 0:
			c.hit.Match = memory.MatchBoth
		case c.sense > 0:
			c.hit.Match = memory.MatchMeaning
		default:
			c.hit.Match = memory.MatchWords
		}
		c.hit.Score = c.score
	}
	// Equal sums: the keyword hit first (exact words, never lagging), then
	// the meaning order.
	slices.SortStableFunc(cands, func(a, b fusedHit) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(rankOrLast(a.words), rankOrLast(b.words)),
			cmp.Compare(rankOrLast(a.sense), rankOrLast(b.sense)))
	})
	hits, err = r.readFused(ctx, rc.text, cands[:min(len(cands), limit)], q.At)
	return hits, len(cands) >= limit, err
}

// readFused reads the keyword candidates that made the answer from the
// Source, in one pass, and gives every hit its fused score and match. A
// keyword candidate forgotten since the search is left out; a stale one is
// marked as of at.
func (r *Registry) readFused(ctx context.Context, query string, cands []fusedHit, at time.Time) ([]memory.Hit, error) {
	var ms []rank.Match
	for _, c := range cands {
		if c.m != nil {
			ms = append(ms, *c.m)
		}
	}
	read, err := r.readHits(ctx, query, ms, at)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Hit, 0, len(cands))
	var mk *text.Marker // snippet marks, built on the first meaning-only hit
	for _, c := range cands {
		h := c.hit
		if c.m != nil {
			kw := read[0]
			read = read[1:]
			if kw == nil {
				continue
			}
			h = *kw
		} else {
			if mk == nil {
				mk = text.NewMarker(query)
			}
			h.Snippet = text.Snippet(c.content, mk.Spans(c.content))
			h.Explanation = explainMeaning
		}
		h.Score, h.Match = c.score, c.hit.Match
		out = append(out, h)
	}
	return out, nil
}

// rankOrLast orders "not found on this path" (0) after every rank (a
// deeper pass of SearchProjects ranks beyond MaxLimit).
func rankOrLast(rank int) int {
	if rank == 0 {
		return math.MaxInt
	}
	return rank
}

// fuseCandidates lists the keyword hits and the meaning hits as one set of
// candidates with their rank on each path. A meaning hit the keyword path
// did not find is read from the Source (all of them at once per project,
// see latestOf): the latest version stands for it (its vector may be of an
// older one: meaning lags), and it is left out if it was forgotten, is gone,
// or lacks one of the query's tags. Meaning ranks count only the hits kept.
func (r *Registry) fuseCandidates(ctx context.Context, words []rank.Match, near []vector.Hit, q memory.SearchQuery) ([]fusedHit, error) {
	type key struct {
		ref  memory.ProjectRef
		slug string
	}
	cands := make([]fusedHit, 0, len(words)+len(near))
	at := make(map[key]int, len(words))
	for i := range words {
		at[key{words[i].Ref, words[i].DM.ID}] = len(cands)
		cands = append(cands, fusedHit{m: &words[i], words: i + 1})
	}
	var toRead []entryRef // the hits only meaning found, in order
	for _, n := range near {
		if _, ok := at[key{n.Ref, n.Slug}]; !ok {
			toRead = append(toRead, entryRef{n.Ref, n.Slug})
		}
	}
	latest, failed, err := r.latestOf(ctx, toRead)
	if err != nil {
		return nil, err
	}
	rank, k := 0, -1
	for _, n := range near {
		if j, ok := at[key{n.Ref, n.Slug}]; ok {
			rank++
			cands[j].sense = rank
			continue
		}
		k++
		if err := failed[k]; err != nil {
			r.meaning.Fail("meaning hit left out", err, "project", n.Ref.String(), "slug", n.Slug)
			continue
		}
		v, ok := latest[k]
		if !ok {
			r.meaning.Forget(n)
			continue
		}
		if !memory.HasTags(v.Tags, q.Tags) { // exact, as the keyword path's tag filter
			continue
		}
		rank++
		cands = append(cands, fusedHit{sense: rank, content: v.Content, hit: memory.Hit{
			Project: n.Ref, Slug: n.Slug, Title: v.Title, Version: v.Version,
			Tags: append([]string{}, v.Tags...), UpdatedAt: v.CreatedAt, State: v.StaleState(q.At),
		}})
	}
	return cands, nil
}
