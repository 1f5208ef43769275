package service

import (
	"context"
	"slices"

	"munin/internal/memory"
	searchtext "munin/internal/search/text"
)

// withPending adds the caller's own pending proposals that match the query
// to a recall's hits: read-your-writes holds for what an agent proposed
// (docs/architecture.md#invariant-3-read-your-writes), while nobody else
// sees a pending proposal anywhere. They come first, marked State
// "pending", and the list stays within the recall's limit.
//
// Only the keys that can propose (propose and write keys) are asked: admin
// keys write directly and read keys cannot write, so a recall of theirs
// costs no extra read. A proposal matches when an analysed query term occurs
// in its title or content (the words the index would have matched) and it
// carries all the recall's tags; a proposed forget is no text to find.
func (s *Service) withPending(ctx context.Context, keys []memory.Key, req RecallRequest, hits []Hit) ([]Hit, error) {
	var marker *searchtext.Marker
	var pending []Hit
	for _, k := range keys {
		if k.Role != memory.RolePropose && k.Role != memory.RoleWrite {
			continue
		}
		ps, _, err := s.store.Proposals(ctx, k.Project, memory.ProposalPending, k.Agent, 0, memory.MaxPendingProposals)
		if err != nil {
			return nil, s.internalErr("recall", k, err)
		}
		for _, p := range ps {
			if p.Deleted || !hasTags(p.Tags, req.Tags) {
				continue
			}
			if marker == nil {
				marker = searchtext.NewMarker(req.Query)
			}
			spans := marker.Spans(p.Content)
			if len(spans) == 0 && len(marker.Spans(p.Title)) == 0 {
				continue
			}
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
	limit := req.Limit
	if limit <= 0 {
		limit = memory.DefaultRecallLimit
	}
	// The newest proposals first: the one just made is the one looked for.
	slices.Reverse(pending)
	out := append(pending[:min(len(pending), limit)], hits...)
	return out[:min(len(out), limit)], nil
}

// hasTags reports whether tags holds every one of want.
func hasTags(tags, want []string) bool {
	for _, w := range want {
		if !slices.Contains(tags, w) {
			return false
		}
	}
	return true
}
