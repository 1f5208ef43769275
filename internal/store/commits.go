package store

import (
	"slices"
	"sync"
	"sync/atomic"
)

// The commit signal tells listeners (the change feed's live readers) that
// a workspace acknowledged audit rows. The goroutine that acknowledges a
// batch (the writer on a single server, after COMMIT; the acker in a
// cluster, after the replica confirmed it) only marks the workspace and
// nudges one dispatcher goroutine, which loads the workspace's feed end
// (workspace.confirmed) once and calls the listeners if it moved: a
// thousand listeners cost a write nothing more than one, a batch without
// an audit row (a search-log flush, a setting) wakes nobody, and nobody
// is woken for a batch the feed does not show yet.
//
// The listeners live in one hub for the whole process, keyed by store and
// workspace, because the hub only holds a store while something listens
// to it (an entry goes when its last listener stops).

// OnCommit calls wake after write batches of one of the workspaces on
// this store acknowledged audit rows (after the acknowledgement, so a
// reader woken by it finds them in FeedRead; several batches may fold into
// one call). wake means "read
// again": the rows may be of projects or proposals the reader does not
// see. wake runs on the hub's goroutine and must not block. stop ends the
// calls; after it returns, wake is not called again.
func (s *Store) OnCommit(workspaces []string, wake func()) (stop func()) {
	sub := &commitSub{wake: wake}
	keys := make([]hubKey, 0, len(workspaces))
	ends := map[hubKey]int64{}
	for _, ws := range workspaces {
		if k := (hubKey{s, ws}); !slices.Contains(keys, k) {
			keys = append(keys, k)
			if end, ok := s.feedEnd(ws); ok {
				ends[k] = end
			}
		}
	}
	hub.add(keys, ends, sub)
	var once sync.Once
	return func() { once.Do(func() { hub.remove(keys, sub) }) }
}

// noteCommit tells the hub that workspace ws of s acknowledged a batch. It
// runs in the workspace's writer or acker goroutine (see publish): without
// listeners it is one atomic load.
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

// feedEnd is the last acknowledged audit id of workspace name, where its
// feed ends, if it is open and the id is known (ok false otherwise).
func (s *Store) feedEnd(name string) (end int64, ok bool) {
	s.mu.Lock()
	ws := s.workspaces[name]
	s.mu.Unlock()
	if ws == nil {
		return 0, false
	}
	end = ws.confirmed.Load()
	return end, end >= 0
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
	ends      map[hubKey]int64    // each listened workspace's feed end the listeners were woken for
	dirty     map[hubKey]struct{} // workspaces committed since the dispatcher last looked
	running   bool                // a dispatcher goroutine runs
	busy      bool                // it is waking the workspaces it took from dirty
	kick      chan struct{}       // cap 1: there is something dirty
}

var hub = &commitHub{
	subs:  map[hubKey]map[*commitSub]struct{}{},
	ends:  map[hubKey]int64{},
	dirty: map[hubKey]struct{}{},
	kick:  make(chan struct{}, 1),
}

// add registers sub for keys. ends are the keys' feed ends read
// before: they start a key's record only if it has none, because one kept
// by earlier listeners may be older, and a commit in between must still
// wake them.
func (h *commitHub) add(keys []hubKey, ends map[hubKey]int64, sub *commitSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[*commitSub]struct{}{}
			if end, ok := ends[k]; ok {
				h.ends[k] = end
			}
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
			delete(h.ends, k)
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

// dispatch wakes the listeners of the workspaces marked dirty whose feed
// end moved, until no listener is left.
func (h *commitHub) dispatch() {
	var keys []hubKey
	var calls []*commitSub
	for range h.kick {
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		keys = keys[:0]
		for k := range h.dirty {
			keys = append(keys, k)
			delete(h.dirty, k)
		}
		h.busy = true
		h.mu.Unlock()
		for _, k := range keys {
			// Once per workspace, not per listener; an unknown end wakes
			// them (reading again is safe).
			end, ok := k.s.feedEnd(k.ws)
			h.mu.Lock()
			if last, known := h.ends[k]; ok && known && last == end {
				h.mu.Unlock()
				continue
			}
			if _, listened := h.subs[k]; ok && listened {
				h.ends[k] = end
			}
			calls = calls[:0]
			for sub := range h.subs[k] {
				calls = append(calls, sub)
			}
			h.mu.Unlock()
			for _, sub := range calls {
				sub.call()
			}
		}
		h.mu.Lock()
		h.busy = false
		h.mu.Unlock()
	}
}

// hubSize counts the hub's workspace entries and whether its dispatcher
// runs (tests: nothing is left behind).
func hubSize() (entries int, running bool) {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return len(hub.subs), hub.running
}

// hubSettled reports whether every commit marked so far has been
// dispatched (tests).
func hubSettled() bool {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return len(hub.dirty) == 0 && !hub.busy
}
