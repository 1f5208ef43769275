package search

import (
	"context"
	"fmt"
	"time"

	"munin/internal/memory"
	"munin/internal/search/rank"
	"munin/internal/search/text"
)

// Hits are read from the database, not from the index. The index stores no text
// and keeps no term vectors: both cost more memory than the text itself (see
// memory_test.go). Each hit shows its entry's latest version, read after the
// search: all hits of a project in one statement (Source.LatestMany), so a hit
// costs neither a stored-field lookup in the index (an _id lookup across all
// segments) nor a statement of its own. An entry forgotten between the search and
// the read is left out, so a forgotten entry never comes back (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes); one replaced meanwhile
// shows its new version. The snippet's marks are found by analyzing the content
// with the same analyzers as the query (text.Marker). A hit a lower tier found
// (a compound's parts, a typo's correction) says how it matched and marks the
// words that matched instead (explain.go).
//
// Whether an entry still holds (past its valid_until, or superseded by
// another entry's write) is read here too, from the latest version and its
// entry, and marked in Hit.State: the index documents know neither, because
// an index on disk is derived data that must depend neither on the clock nor
// on another slug's write (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes). SearchProjects
// (stale.go) drops or reorders the stale hits.

// hitsFrom turns bleve's matches into hits, in order, leaving out entries
// forgotten since the search and marking stale ones (at the time of the
// call). query is the query text, for the snippet marks.
func (r *Registry) hitsFrom(ctx context.Context, query string, matches []rank.Match) ([]memory.Hit, error) {
	return r.hitsAt(ctx, query, matches, time.Now())
}

// hitsAt is hitsFrom with staleness judged at at.
func (r *Registry) hitsAt(ctx context.Context, query string, matches []rank.Match, at time.Time) ([]memory.Hit, error) {
	read, err := r.readHits(ctx, query, matches, at)
	if err != nil {
		return nil, err
	}
	hits := make([]memory.Hit, 0, len(read))
	for _, h := range read {
		if h != nil {
			hits = append(hits, *h)
		}
	}
	return hits, nil
}

// readHits is hitsAt with one entry per match, nil where the entry is gone.
func (r *Registry) readHits(ctx context.Context, query string, matches []rank.Match, at time.Time) ([]*memory.Hit, error) {
	es := make([]entryRef, len(matches))
	for i, m := range matches {
		es[i] = entryRef{m.Ref, m.DM.ID}
	}
	latest, failed, err := r.latestOf(ctx, es)
	if err != nil {
		return nil, err
	}
	for i, err := range failed {
		return nil, memory.Internal(fmt.Errorf("search %s: read hit %s: %w", es[i].ref, es[i].slug, err))
	}
	hits := make([]*memory.Hit, len(matches))
	var (
		mk *text.Marker // built on the first hit
		ex *explainer   // built on the first hit of a lower tier
	)
	for i, m := range matches {
		v, ok := latest[i]
		if !ok {
			continue
		}
		if mk == nil {
			mk = text.NewMarker(query)
		}
		h := &memory.Hit{
			Slug: m.DM.ID, Score: m.DM.Score, Title: v.Title, Version: v.Version,
			UpdatedAt: v.CreatedAt, Tags: append([]string{}, v.Tags...), Project: m.Ref,
			Match: memory.MatchWords, State: v.StaleState(at),
		}
		spans := mk.Spans(v.Content)
		if len(m.Alts) > 0 {
			if ex == nil {
				ex = newExplainer(query)
			}
			var more []text.Span
			h.Explanation, more = ex.explain(m.Alts, v.Title, v.Content)
			spans = append(spans, more...)
		}
		h.Snippet = text.Snippet(v.Content, spans)
		hits[i] = h
	}
	return hits, nil
}

// entryRef names an entry of a project.
type entryRef struct {
	ref  memory.ProjectRef
	slug string
}

// latestOf reads the latest live version of each entry of es, keyed by its
// position; an entry forgotten or gone has none. Several entries are read
// with LatestMany, one statement per project; one alone with Latest. A read that failed
// is in failed, by position; err is only the caller's context ending.
func (r *Registry) latestOf(ctx context.Context, es []entryRef) (latest map[int]memory.Version, failed map[int]error, err error) {
	latest, failed = make(map[int]memory.Version, len(es)), map[int]error{}
	got := func(i int, v memory.Version, err error) {
		switch {
		case memory.ErrorCode(err) == memory.CodeNotFound:
		case err != nil:
			failed[i] = err
		case !v.Deleted:
			latest[i] = v
		}
	}
	if len(es) < 2 {
		for i, e := range es {
			v, err := r.src.Latest(ctx, e.ref, e.slug)
			got(i, v, err)
		}
	} else {
		byRef := map[memory.ProjectRef][]int{}
		var refs []memory.ProjectRef
		for i, e := range es {
			if _, seen := byRef[e.ref]; !seen {
				refs = append(refs, e.ref)
			}
			byRef[e.ref] = append(byRef[e.ref], i)
		}
		for _, ref := range refs {
			at := byRef[ref]
			slugs := make([]string, len(at))
			for j, i := range at {
				slugs[j] = es[i].slug
			}
			vs, err := r.src.LatestMany(ctx, ref, slugs)
			for _, i := range at {
				v, ok := vs[es[i].slug]
				switch {
				case err != nil:
					got(i, v, err)
				case ok:
					got(i, v, nil)
				}
			}
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && len(failed) > 0 {
		return nil, nil, fmt.Errorf("search: read hits: %w", ctxErr)
	}
	return latest, failed, nil
}
