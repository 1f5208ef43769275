package service

import (
	"context"

	"munin/internal/memory"
)

// HeavyWork admits one CPU-heavy piece of work of caller c in project ref —
// a web page that renders an entry's Markdown or diffs two versions — under
// the same limits as a recall: per key and per project, on the limiter
// recalls use, so that pages and recalls of one key or one project share
// one allowance. Over a limit it answers budget_exhausted with a
// RetryAfter, at once or after the project's short wait (see
// ProjectRecallWait). release must be called when the work is done.
//
// The key charged is the caller's key for ref (the zero ref: its first
// key, as a recall across its projects). A project the caller holds no key
// for is not_found, as Scope answers. HeavyWork does not authorize the work
// itself: the use case that hands out the content does; this only decides
// when it may run.
func (s *Service) HeavyWork(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (release func(), err error) {
	if c.Empty() {
		return nil, errMissingKey
	}
	key := c.First()
	if ref != (memory.ProjectRef{}) && !c.ServerAdmin() {
		var ok bool
		if key, ok = c.KeyFor(ref); !ok {
			return nil, notFound(ref)
		}
	}
	return s.recallLimit.acquire(ctx, key)
}
