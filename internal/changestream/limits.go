package changestream

import (
	"fmt"
	"time"

	"munin/internal/limit"
	"munin/internal/memory"
)

// limits count the open streams of each key and each project. A stream
// holds a connection and a goroutine for as long as its client likes, so
// their number is bounded like MCP's GET streams: per key (a stream counts
// for every key of its caller) and per project of the caller's first key
// (all its keys together), all or none (limit.Acquire).
type limits struct {
	key     *limit.Keyed[int64]
	project *limit.Keyed[memory.ProjectRef]
}

func newLimits(perKey int) *limits {
	return &limits{
		key:     limit.New[int64](limit.Rule{InFlight: perKey}, nil),
		project: limit.New[memory.ProjectRef](limit.Rule{InFlight: ProjectKeys * perKey}, nil),
	}
}

// refusedRetry is the Retry-After of a refused stream: a stream ends when
// its client leaves, which the server cannot foresee.
const refusedRetry = 5 * time.Second

// acquire takes c's units, or refuses with a *RefusedError naming the limit.
func (l *limits) acquire(c memory.Caller) (release func(), err error) {
	keys := c.Keys()
	slots := make([]limit.Slot, 0, len(keys)+1)
	for _, k := range keys {
		slots = append(slots, l.key.Slot(k.ID))
	}
	first := c.First()
	slots = append(slots, l.project.Slot(first.Project))
	release, refused := limit.Acquire(slots...)
	if refused == nil {
		return release, nil
	}
	if refused.Index < len(keys) {
		k := keys[refused.Index]
		return nil, &RefusedError{RetryAfter: refusedRetry, Message: fmt.Sprintf(
			"key %d (%s) has %d change streams open, the most one key may; close one (or resume it with Last-Event-ID) and retry",
			k.ID, k.Agent, l.key.Rule().InFlight)}
	}
	return nil, &RefusedError{RetryAfter: refusedRetry, Message: fmt.Sprintf(
		"project %s has %d change streams open, the most one project may (all its keys together); close one and retry",
		first.ProjectLabel(), l.project.Rule().InFlight)}
}
