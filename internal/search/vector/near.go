package vector

import (
	"context"
	"time"

	"munin/internal/memory"
)

// Near is the meaning half of remember's duplicate hint (package search,
// similar.go): the entries of ref whose vectors are most like a new entry's
// text. Unlike a recall's query, the text is embedded without the query
// cache: an entry is written once, and its text would push the agents'
// repeated queries out of the cache.
//
// It costs remember one embedding call for each new slug, and the hint
// waits for it at most NearWait. While the endpoint's last call failed, it
// calls nothing and answers nothing at once: a remember never waits for an
// endpoint that is known to be down (the recalls and the worker find out
// when it is back).

// NearWait bounds the embedding of Near's text and the load of the
// project's vectors: past it the hint is by words alone.
const NearWait = 500 * time.Millisecond

// DefaultNearMin is Options.NearMin's default. Cosine similarities depend
// on the model, and no model could be measured where Munin is built (the
// words half is measured: internal/search/quality/similar_test.go): 0.85
// is a cautious start, well above what unrelated texts of one team score
// with the common models; set --embed-similar-min to the model's scale.
const DefaultNearMin = 0.85

// failingReporter is implemented by an embedder that knows whether its
// endpoint's last call failed (embed.Client).
type failingReporter interface{ Failing() bool }

// Near returns the depth vectors of ref most similar to text with a
// similarity of at least Options.NearMin, most similar first, or nothing
// without an error while the endpoint is failing.
func (m *Meaning) Near(ctx context.Context, ref memory.ProjectRef, text string, depth int) ([]Hit, error) {
	if f, ok := m.opts.Embedder.(failingReporter); ok && f.Failing() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, NearWait)
	defer cancel()
	refs := []memory.ProjectRef{ref}
	m.start(ref, m.project(ref)) // the load overlaps the embedding
	q, err := m.embedOnce(ctx, text)
	if err != nil {
		return nil, err
	}
	out := m.nearest(ctx, refs, q, depth)
	for i, h := range out {
		if h.Sim < m.opts.NearMin {
			return out[:i], nil
		}
	}
	return out, nil
}
