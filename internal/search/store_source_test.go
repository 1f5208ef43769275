package search_test

import (
	"munin/internal/search"
	"munin/internal/store"
)

// The store is the Source of every registry the application builds: it
// reads a recall's hits with LatestMany, one statement per project.
var _ search.Source = (*store.Store)(nil)
