package service

import (
	"context"
	"sync"
	"time"

	"munin/internal/memory"
)

// keyLimit holds the key limits of every project (memory.KeyCreationsPerHour,
// memory.MaxLiveKeys). It counts from the keys table itself, revoked keys
// included, so a restart forgets nothing and nothing else needs storing.
// Its zero value is ready; tests lower the limits.
type keyLimit struct {
	// mu makes counting and creating one step: concurrent creations cannot
	// all pass the count. Creating keys is rare, so one lock for all
	// projects costs nothing.
	mu sync.Mutex
	// perHour and live override the memory constants when > 0 (tests).
	perHour, live int
}

// createLimited creates a key through create (the store's insert) if ref's
// key limits allow one more. Every creation but the command line's goes
// through here.
func (s *Service) createLimited(ctx context.Context, ref memory.ProjectRef, create func() (string, memory.Key, error)) (string, memory.Key, error) {
	l := &s.keyLimit
	l.mu.Lock()
	defer l.mu.Unlock()
	perHour, live := memory.KeyCreationsPerHour, memory.MaxLiveKeys
	if l.perHour > 0 {
		perHour = l.perHour
	}
	if l.live > 0 {
		live = l.live
	}
	now := s.opts.Now()
	c, err := s.store.KeyCounts(ctx, ref, now.Add(-time.Hour))
	if err != nil {
		return "", memory.Key{}, err
	}
	if c.CreatedSince >= perHour {
		// The window slides: one more key may be created an hour after the
		// oldest creation in it.
		wait := max(c.OldestSince.Add(time.Hour).Sub(now), 0)
		secs := int64((wait + time.Second - 1) / time.Second)
		secs = max(secs, 1)
		e := memory.Errorf(memory.CodeBudgetExhausted,
			"project %s created its %d keys in the last hour (revoked ones count); retry in %d s", ref, perHour, secs)
		e.RetryAfter = time.Duration(secs) * time.Second
		return "", memory.Key{}, e
	}
	if c.Live >= live {
		return "", memory.Key{}, memory.Errorf(memory.CodeTooLarge,
			"project %s has %d live keys, the most a project may hold; revoke keys it no longer uses first", ref, live)
	}
	return create()
}
