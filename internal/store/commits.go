package store

import (
	"slices"
	"sync"
	"sync/atomic"
)

// The commit signal tells listeners (the change feed's live readers) that
// a workspace committed a write batch. The writer goroutine only marks the
// workspace and nudges one dispatcher goroutine, which calls the
// listeners: a thousand listeners cost a write nothing more than one.
//
// The listeners live in one hub for the whole process, keyed by store and
// workspace, because the hub only holds a store while something listens
// to it (an entry goes when its last listener stops).

// OnCommit calls wake after every committed write batch of one of the
// workspaces on this store (not before the commit, so a reader woken by it
// finds the batch's rows). Batches without an audit row (a search-log
// flush) may wake it too: wake means "read again", never "there is news".
// wake runs on the hub's goroutine and must not block. stop ends the
// calls; after it returns, wake is not called again.
func (s *Store) OnCommit(workspaces []string, wake func()) (stop func()) {
	sub := &commitSub{wake: wake}
	keys := make([]hubKey, 0, len(workspaces))
	for _, ws := range workspaces {
		if k := (hubKey{s, ws}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	hub.add(keys, sub)
	var once sync.Once
	return func() { once.Do(func() { hub.remove(keys, sub) }) }
}

// noteCommit tells the hub that workspace ws of s committed a batch. It
// runs in the writer goroutine: without listeners it is one atomic load.
func (s *Store) noteCommit(ws string) {
	if hub.listeners.Load() == 0 {
		return
	}
	hub.mark(hubKey{s, ws})
}

type hubKey struct {
	s  *Store
	ws string
}

// commitSub is one listener. mu orders its calls against stop: stop takes
// it, so no call is under way once stop returned.
type commitSub struct {
	mu      sync.Mutex
	stopped bool
	wake    func()
}

func (c *commitSub) call() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.wake()
	}
}

// commitHub is the process's registry of listeners and its dispatcher.
type commitHub struct {
	listeners atomic.Int64 // listeners in all: the writer's fast path
	mu        sync.Mutex
	subs      map[hubKey]map[*commitSub]struct{}
	dirty     map[hubKey]struct{} // workspaces committed since the dispatcher last looked
	running   bool                // a dispatcher goroutine runs
	kick      chan struct{}       // cap 1: there is something dirty
}

var hub = &commitHub{
	subs:  map[hubKey]map[*commitSub]struct{}{},
	dirty: map[hubKey]struct{}{},
	kick:  make(chan struct{}, 1),
}

func (h *commitHub) add(keys []hubKey, sub *commitSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[*commitSub]struct{}{}
		}
		h.subs[k][sub] = struct{}{}
	}
	h.listeners.Add(1)
	if !h.running {
		h.running = true
		go h.dispatch()
	}
}

func (h *commitHub) remove(keys []hubKey, sub *commitSub) {
	sub.mu.Lock()
	sub.stopped = true
	sub.mu.Unlock()
	h.mu.Lock()
	for _, k := range keys {
		delete(h.subs[k], sub)
		if len(h.subs[k]) == 0 {
			delete(h.subs, k)
			delete(h.dirty, k)
		}
	}
	h.listeners.Add(-1)
	h.mu.Unlock()
	h.nudge() // a dispatcher without listeners left ends
}

func (h *commitHub) mark(k hubKey) {
	h.mu.Lock()
	_, listened := h.subs[k]
	if listened {
		h.dirty[k] = struct{}{}
	}
	h.mu.Unlock()
	if listened {
		h.nudge()
	}
}

func (h *commitHub) nudge() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// dispatch wakes the listeners of the workspaces marked dirty, until no
// listener is left.
func (h *commitHub) dispatch() {
	var calls []*commitSub
	for range h.kick {
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		calls = calls[:0]
		for k := range h.dirty {
			for sub := range h.subs[k] {
				calls = append(calls, sub)
			}
			delete(h.dirty, k)
		}
		h.mu.Unlock()
		for _, sub := range calls {
			sub.call() // a listener of two dirty workspaces is woken twice: harmless
		}
	}
}

// hubSize counts the hub's workspace entries and whether its dispatcher
// runs (tests: nothing is left behind).
func hubSize() (entries int, running bool) {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return len(hub.subs), hub.running
}
