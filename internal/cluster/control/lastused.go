package control

import (
	"context"
	"time"

	"munin/internal/memory"
)

// lastUse asks the writer to record that key id was used at at; a lastUse
// with done set is a barrier (tests wait until everything before it is written).
type lastUse struct {
	id   int64
	at   time.Time
	done chan struct{}
}

// queueLastUsed hands a last_used_at update to the writer without waiting,
// so authentication never waits for etcd. A full queue drops the update.
func (c *Control) queueLastUsed(id int64, at time.Time) bool {
	select {
	case c.lastUsed <- lastUse{id: id, at: at}:
		return true
	default:
		return false
	}
}

// writeLastUsed writes queued last_used_at updates until ctx ends. A failed
// write is logged and dropped: last_used_at is a hint.
func (c *Control) writeLastUsed(ctx context.Context) {
	defer c.wg.Done()
	for {
		var u lastUse
		select {
		case <-ctx.Done():
			return
		case u = <-c.lastUsed:
		}
		if u.done != nil {
			close(u.done)
			continue
		}
		var guess *entry[keyRecord]
		if e, ok := c.cache.key(u.id); ok {
			guess = &e
		}
		at := u.at.UnixNano()
		_, err := update(ctx, c, c.paths.key(u.id), guess, func(r *keyRecord) (bool, error) {
			// Another node may have written a use within the minute meanwhile.
			if r == nil || at-r.LastUsedAt < int64(memory.LastUsedEvery) {
				return false, nil
			}
			r.LastUsedAt = at
			return true, nil
		})
		if err != nil && ctx.Err() == nil {
			c.log.Warn("update key last_used_at", "key_id", u.id, "err", err)
		}
	}
}

// flushLastUsed waits until the writer has handled every update queued
// before it (tests), or ctx ends.
func (c *Control) flushLastUsed(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case c.lastUsed <- lastUse{done: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
