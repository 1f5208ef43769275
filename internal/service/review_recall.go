package service

import (
	"context"
	"slices"

	"munin/internal/memory"
	searchtext "munin/internal/search/text"
)

// withPending adds the caller's own pending proposals that match the query
// to a recall's hits: read-your-writes holds for what an agent proposed
// (invariant 3, docs/architecture.md#invariant-3-read-your-writes), while
// nobody else sees a pending proposal anywhere. They come first, newest
// first (the one just made is the one looked for), marked State "pending",
// and the list stays within the recall's limit. q is the query as recall
// checked it: its text, tags and limit are the ones the index searched with.
//
// Only the keys that can propose (propose and write keys) are asked: admin
// keys write directly and read keys cannot write, so a recall of theirs
// costs no extra read; for the others it is one indexed read per project
// (Store.PendingOf), which finds nothing for most recalls. A proposal
// matches when an analysed query term occurs in its title or content (the
// words the index would have matched) and it carries all the recall's tags
// (memory.HasTags, the filter of the meaning path too); a proposed forget
// is no text to find.
func (s *Service) withPending(ctx context.Context, keys []memory.Key, q memory.SearchQuery, hits []Hit) ([]Hit, error) {
	var marker *searchtext.Marker
	var pending []Hit
	asked := 0
	for _, k := range keys {
		if k.Role != memory.RolePropose && k.Role != memory.RoleWrite {
			continue
		}
		asked++
		ps, err := s.store.PendingOf(ctx, k.Project, k.Agent)
		if err != nil {
			return nil, s.internalErr("recall", k, err)
		}
		found := 0
		// Newest first: once a project gave the limit's worth, its older
		// proposals could not be shown.
		for _, p := range ps {
			if found == q.Limit {
				break
			}
			if p.Deleted || !memory.HasTags(p.Tags, q.Tags) {
				continue
			}
			if marker == nil {
				marker = searchtext.NewMarker(q.Text)
			}
			spans := marker.Spans(p.Content)
			if len(spans) == 0 && len(marker.Spans(p.Title)) == 0 {
				continue
			}
			found++
			pending = append(pending, Hit{
				Project: k.Project.String(), Slug: p.Slug, Title: p.Title, Version: p.BaseVersion,
				Snippet: searchtext.Snippet(p.Content, spans), Tags: nonNil(p.Tags), UpdatedAt: p.CreatedAt.UTC(),
				Match: memory.MatchWords, State: memory.ProposalPending,
			})
		}
	}
	if len(pending) == 0 {
		return hits, nil
	}
	if asked > 1 {
		slices.SortStableFunc(pending, func(a, b Hit) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	}
	out := append(pending[:min(len(pending), q.Limit)], hits...)
	return out[:min(len(out), q.Limit)], nil
}
