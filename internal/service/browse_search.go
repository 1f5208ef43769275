package service

import (
	"context"

	"munin/internal/memory"
)

// Search is the web UI's search: the same recall agents use (the same
// checks, limits and index), but it writes no search-log row. A search page
// is a GET that anything on a page a person views can trigger, so a row
// would record as the person's act what another page made their browser do;
// the search log holds agents' recalls only. The zero ref searches every
// project of the caller ("all my projects").
func (s *Service) Search(ctx context.Context, c memory.Caller, ref memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	keys := c.Keys()
	if ref != (memory.ProjectRef{}) {
		key, err := s.reader(ctx, c, ref)
		if err != nil {
			return nil, err
		}
		keys = []memory.Key{key}
	}
	return s.recall(ctx, c, keys, &q, false)
}
