package index

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
)

// DefaultIndexWait is how long a search waits for the refreshes queued before
// it and for its project's index build when Config.IndexWait is 0.
const DefaultIndexWait = 10 * time.Second

// maxRetryHint caps the retry hint of a search that gave up waiting.
const maxRetryHint = 5 * time.Minute

// Ready waits, within Config.IndexWait, until the refreshes queued before the
// call are applied and the index is built, and returns the index and its release
// func, which the caller must call when it is done with the index. Past the
// deadline it answers unavailable with a retry hint instead: the work goes on in
// the background, and a search never runs on an index that lacks writes queued
// before it (read-your-writes, invariant 3,
// docs/architecture.md#invariant-3-read-your-writes).
func (p *Project) Ready(ctx context.Context) (idx bleve.Index, release func(), err error) {
	wait, cancel := context.WithTimeout(ctx, p.cfg.IndexWait)
	defer cancel()
	start := time.Now()
	if err := p.settle(wait); err != nil {
		return nil, nil, p.waitErr(ctx, wait, err, start)
	}
	idx, release, err = p.searchIndex(wait)
	if err != nil {
		return nil, nil, p.waitErr(ctx, wait, err, start)
	}
	return idx, release, nil
}

// waitErr turns a wait cut off by the deadline (not by the caller) into
// unavailable with a retry hint; other errors pass.
func (p *Project) waitErr(ctx, wait context.Context, err error, start time.Time) error {
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) || wait.Err() == nil {
		return err
	}
	hint := p.retryHint(time.Since(start))
	e := memory.Errorf(memory.CodeUnavailable, "index is catching up, retry in %d s", int(hint/time.Second))
	e.RetryAfter = hint
	return e
}

// retryHint estimates when the pending work will be done: it has run for at
// least waited (the work began before this search waited for it), and work
// that has run for a while is expected to need about as long again. Whole
// seconds, at least one, at most maxRetryHint.
func (p *Project) retryHint(waited time.Duration) time.Duration {
	running := waited
	p.qmu.Lock()
	for _, since := range []time.Time{p.pendingSince(), p.buildSince()} {
		if !since.IsZero() {
			running = max(running, time.Since(since))
		}
	}
	p.qmu.Unlock()
	secs := math.Ceil(min(running, maxRetryHint).Seconds())
	return time.Duration(max(1, secs)) * time.Second
}

// pendingSince is when the oldest refresh still waiting was queued. qmu is held.
func (p *Project) pendingSince() time.Time {
	if p.applying != nil {
		return p.applying.queued
	}
	if p.collecting != nil {
		return p.collecting.queued
	}
	return time.Time{}
}

// buildSince is when the build searches wait for started. qmu is held.
func (p *Project) buildSince() time.Time {
	if p.building != nil {
		return p.building.started
	}
	return time.Time{}
}
