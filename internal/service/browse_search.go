package service

import (
	"context"

	"munin/internal/memory"
)

// Search is the web UI's search: the same recall agents use (the same
// checks, limits and index), but it writes no search-log row. A search page
// is a GET that anything on a page a person views can trigger, so a row
// would record as the person's act what another page made their browser do;
// the search log holds agents' recalls only.
func (b *Browser) Search(ctx context.Context, key memory.Key, q memory.SearchQuery) ([]memory.Hit, error) {
	return b.svc.recall(ctx, key, q, false)
}
