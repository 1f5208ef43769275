package service

import (
	"context"
	"time"

	"munin/internal/memory"
)

// similarWait bounds the duplicate lookup of one remember: the hint is
// worth little next to the write, so an index that is slow to answer (a
// project's first build, an owner far away) costs the write at most this,
// and the answer carries no hint.
const similarWait = 2 * time.Second

// similarIfNew finds the live entries whose text closely matches w's when
// the write res created a new slug (Similarity.Similar): the hint `similar`
// of the answer, and of a proposal in the review queue (NoteSimilar). It
// runs after the write, when its result says whether the slug is new
// (version 1, or a proposal based on version 0), so that an update pays
// nothing for it. With the hint switched off, for the server
// (Options.SimilarOff) or for the project (its setting similar, which the
// writer reports in the write's result), it finds nothing. The lookup never fails the remember: its error is logged and the
// answer carries no hint.
func (s *Service) similarIfNew(ctx context.Context, key memory.Key, w memory.Write, res WriteResult) []memory.Similar {
	isNew := res.Version == 1 || (res.Proposal != "" && res.BaseVersion != nil && *res.BaseVersion == 0)
	if s.opts.SimilarOff || res.similarOff || w.Deleted || !isNew {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, similarWait)
	defer cancel()
	found, err := s.index.Similar(ctx, key.Project, w.Slug, w.Title+"\n"+w.Content)
	if err != nil {
		s.log.Warn("similar entries not looked up; remember answers without the hint",
			"project", key.Project.String(), "slug", w.Slug, "err", err)
		return nil
	}
	if len(found) > memory.MaxSimilar {
		found = found[:memory.MaxSimilar]
	}
	if res.Proposal != "" && len(found) > 0 {
		if _, n, err := ParseProposalID(res.Proposal); err == nil {
			if err := s.store.NoteSimilar(ctx, key.Project, n, found); err != nil {
				s.log.Warn("similar entries of a proposal not recorded", "project", key.Project.String(), "slug", w.Slug, "err", err)
			}
		}
	}
	return found
}
