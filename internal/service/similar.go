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
// w creates a new slug (Similarity.Similar): the hint `similar` of the
// answer, and of a proposal in the review queue. A write that names an
// expected version above 0 updates an entry and is not asked about. The
// lookup never fails the remember: its error is logged and the answer
// carries no hint.
func (s *Service) similarIfNew(ctx context.Context, key memory.Key, w memory.Write) ([]memory.Similar, error) {
	if w.Deleted || (w.ExpectedVersion != nil && *w.ExpectedVersion > 0) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, similarWait)
	defer cancel()
	found, err := s.index.Similar(ctx, key.Project, w.Slug, w.Title+"\n"+w.Content)
	if err != nil {
		s.log.Warn("similar entries not looked up; remember answers without the hint",
			"project", key.Project.String(), "slug", w.Slug, "err", err)
		return nil, nil
	}
	if len(found) > memory.MaxSimilar {
		found = found[:memory.MaxSimilar]
	}
	return found, nil
}
