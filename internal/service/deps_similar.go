package service

import (
	"context"

	"munin/internal/memory"
)

// Similarity is the part of Index that finds entries whose text closely
// matches a new one: the hint `similar` of a remember that creates a slug.
type Similarity interface {
	// Similar returns the live entries of ref whose text closely matches
	// text (a new entry's title and content), best first, at most
	// memory.MaxSimilar, never slug itself; the service asks for new slugs
	// only. Each score is in 0..1, 1 the most
	// alike (search.Registry.Similar says how it is computed).
	Similar(ctx context.Context, ref memory.ProjectRef, slug, text string) ([]memory.Similar, error)
}
