package vector

import (
	"context"
	"errors"
	"time"

	"munin/internal/memory"
)

// Near is the meaning half of remember's duplicate hint (package search,
// similar.go): the entries of ref whose vectors are most like a new entry's
// text. It is off until Options.NearMin is set (--embed-similar-min):
// cosine similarities have the scale of the model, and one measured here
// (an English-only model on German and English notes, 2026-12-03, see
// AUSBAUSTUFEN.md) hinted 41 % of unrelated writes at 0.85 — a threshold
// must be chosen for the model in use, not guessed by Munin.
//
// Unlike a recall's query, the text is embedded without the query cache: an
// entry is written once, and its text would push the agents' repeated
// queries out of the cache. It costs remember one embedding call for each
// new slug, and the hint waits for it at most NearWait. It calls nothing
// while the endpoint's last call failed (a remember never waits for an
// endpoint known to be down), nor for NearPause after a call of its own
// outlasted NearWait: an endpoint slower than the hint's patience is not
// failing — recalls and the worker go on using it — it is only too slow to
// warn before the answer.

// NearWait bounds the embedding of Near's text and the load of the
// project's vectors: past it the hint is by words alone.
const NearWait = 500 * time.Millisecond

// NearPause is how long Near calls nothing after one of its calls outlasted
// NearWait.
const NearPause = time.Minute

// failingReporter is implemented by an embedder that knows whether its
// endpoint's last call failed (embed.Client).
type failingReporter interface{ Failing() bool }

// errNearSlow is Near's error when its call outlasted NearWait.
var errNearSlow = errors.New("embedding the new text took longer than the hint waits")

// Near returns the depth vectors of ref most similar to text with a
// similarity of at least Options.NearMin, most similar first; nothing
// without an error while it is off, the endpoint is failing or paused.
func (m *Meaning) Near(ctx context.Context, ref memory.ProjectRef, text string, depth int) ([]Hit, error) {
	if m.opts.NearMin <= 0 || time.Now().UnixNano() < m.nearPausedUntil.Load() {
		return nil, nil
	}
	if f, ok := m.opts.Embedder.(failingReporter); ok && f.Failing() {
		return nil, nil
	}
	// Cancelled, not timed out: a call the hint gives up on says nothing
	// about the endpoint's health (embed.Client counts only its own
	// deadlines and the endpoint's answers as failures).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := time.AfterFunc(NearWait, cancel)
	defer slow.Stop()
	m.start(ref, m.project(ref)) // the load overlaps the embedding
	q, err := m.embedOnce(ctx, text)
	if err != nil {
		if !slow.Stop() { // the wait cancelled the call
			m.nearPausedUntil.Store(time.Now().Add(NearPause).UnixNano())
			return nil, errNearSlow
		}
		return nil, err
	}
	out := m.nearest(ctx, []memory.ProjectRef{ref}, q, depth)
	for i, h := range out {
		if h.Sim < m.opts.NearMin {
			return out[:i], nil
		}
	}
	return out, nil
}
