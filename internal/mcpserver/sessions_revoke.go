package mcpserver

import (
	"context"
	"strconv"
	"time"

	"munin/internal/memory"
)

// Stream check defaults, used when the StreamChecks field of the same name
// is zero.
const (
	// DefaultRevokeSweep is how often, while any GET or
	// subscriptions/listen stream is open, the server asks whether the keys
	// of its sessions and streams were revoked. A request of a revoked key
	// is refused at once (the key cache empties on revocation), but a
	// stream outlives the request that authenticated it; it ends within
	// this interval, and the key's sessions with it. One check per distinct
	// key, not per stream: 12-23 µs each (one control-database read;
	// BenchmarkRevokeSweep).
	DefaultRevokeSweep = 5 * time.Second
	// DefaultListenKeepAlive is how often an idle subscriptions/listen
	// stream sends an SSE comment line, so that proxies and clients that
	// drop silent connections keep it: the same 15 s as the REST change
	// stream's heartbeat (changestream.DefaultHeartbeat).
	DefaultListenKeepAlive = 15 * time.Second
)

// StreamChecks are the intervals of the checks open streams get; the zero
// value is the defaults.
type StreamChecks struct {
	// RevokeSweep is how often, while a stream is open, the keys of the
	// sessions and streams are checked: the sessions and streams of a
	// revoked key end (default DefaultRevokeSweep).
	RevokeSweep time.Duration
	// ListenKeepAlive is how often an open subscriptions/listen stream
	// sends a keep-alive comment (default DefaultListenKeepAlive).
	ListenKeepAlive time.Duration
}

// withDefaults fills the zero fields.
func (c StreamChecks) withDefaults() StreamChecks {
	if c.RevokeSweep <= 0 {
		c.RevokeSweep = DefaultRevokeSweep
	}
	if c.ListenKeepAlive <= 0 {
		c.ListenKeepAlive = DefaultListenKeepAlive
	}
	return c
}

// revokeCheckTimeout bounds one sweep's key checks: a control database
// that hangs must not hold the sweep, and with it Close, forever.
const revokeCheckTimeout = 30 * time.Second

// watchRevocation registers an open GET or listen stream with the
// revocation sweep and returns the function to call when it ends. While at
// least one stream is open, the sweep runs every checks.RevokeSweep
// (sweepTick); with none it is not armed, so an idle server, and a server
// nobody closes (tests), runs no sweep and holds no goroutine or timer.
// Streams are what outlive a revocation: every request of a revoked key is
// refused anyway (the key cache empties at once), so a session without a
// stream is inert until a sweep or its idle TTL ends it. The last stream's
// end waits for a sweep in progress, so that no sweep outlives the server's
// streams.
func (s *Server) watchRevocation() (unwatch func()) {
	ids := s.ids
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.listensClosed {
		return func() {}
	}
	ids.watched++
	if ids.sweepTimer == nil {
		ids.sweepGen++
		gen := ids.sweepGen
		ids.sweepTimer = time.AfterFunc(ids.checks.RevokeSweep, func() { s.sweepTick(gen) })
	}
	return func() {
		ids.mu.Lock()
		ids.watched--
		last := ids.watched == 0
		if last {
			ids.stopSweepLocked()
		}
		ids.mu.Unlock()
		if last {
			ids.waitSweep()
		}
	}
}

// stopSweepLocked disarms the sweep; a run already started finds its
// generation stale and does nothing more.
func (s *sessionIDs) stopSweepLocked() {
	if s.sweepTimer != nil {
		s.sweepTimer.Stop()
		s.sweepTimer = nil
	}
	s.sweepGen++
}

// waitSweep returns once no sweep is running.
func (s *sessionIDs) waitSweep() {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock() // nothing to do inside: waiting is the point
}

// sweepTick runs one sweep of generation gen and arms the next, unless the
// sweep was disarmed meanwhile.
func (s *Server) sweepTick(gen uint64) {
	ids := s.ids
	ids.sweepMu.Lock()
	defer ids.sweepMu.Unlock()
	ids.mu.Lock()
	stale := gen != ids.sweepGen
	ids.mu.Unlock()
	if stale {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), revokeCheckTimeout)
	s.sweepRevoked(ctx)
	cancel()
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if gen == ids.sweepGen && ids.sweepTimer != nil {
		ids.sweepTimer.Reset(ids.checks.RevokeSweep)
	}
}

// sweepRevoked checks each key that holds a live session or an open listen
// stream once (service.KeyByID, a read of the control database however many
// sessions and streams the key holds) and ends the sessions and listen
// streams of every key found revoked. Ending a session ends its GET
// streams; a listen stream ends with its final result (serveListen). A key
// that cannot be checked (the database fails) keeps its streams until a
// sweep succeeds: a failure is not a revocation.
func (s *Server) sweepRevoked(ctx context.Context) {
	defer s.ids.sweeps.Add(1)
	var revoked map[string]bool
	failed := 0
	var lastErr error
	for _, k := range s.ids.heldKeys() {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			continue // cannot happen: an owner is key ids (memory.Caller.Owner)
		}
		_, err = s.svc.KeyByID(ctx, id)
		switch {
		case err == nil:
		case memory.ErrorCode(err) == memory.CodeUnauthorized:
			if revoked == nil {
				revoked = make(map[string]bool)
			}
			revoked[k] = true
		case ctx.Err() != nil:
			s.log.Warn("mcp revocation sweep: the key checks took too long; the rest wait for the next sweep", "timeout", revokeCheckTimeout)
			return
		default:
			failed++
			lastErr = err
		}
	}
	if failed > 0 {
		s.log.Warn("mcp revocation sweep: keys could not be checked; their streams stay open until a sweep succeeds",
			"keys", failed, "err", lastErr)
	}
	if len(revoked) == 0 {
		return
	}
	ended, listens := s.ids.endRevoked(revoked)
	for _, id := range ended { // mcp-go forgets them, as after an eviction
		s.dropState(id)
	}
	if len(ended) > 0 || listens > 0 {
		s.log.Info("mcp sessions and streams ended: a key of theirs was revoked",
			"keys", len(revoked), "sessions", len(ended), "listen_streams", listens)
	}
}

// heldKeys are the ids of the keys that hold a live session (or an
// initialize in flight) or an open listen stream, each once.
func (s *sessionIDs) heldKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.keys)+len(s.listens))
	for k := range s.keys {
		out = append(out, k)
	}
	var extra map[string]bool // keys of listen streams without a session
	for _, l := range s.listens {
		for _, k := range l.owner.keys() {
			if s.keys[k] == nil && !extra[k] {
				if extra == nil {
					extra = make(map[string]bool)
				}
				extra[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// endRevoked ends every live session and listen stream held by a key in
// revoked (a session or stream of several keys ends when any of them was
// revoked: its caller's requests are refused from now on anyway). It
// returns the ids of the sessions it ended, for mcp-go to forget, and the
// number of listen streams it ended.
func (s *sessionIDs) endRevoked(revoked map[string]bool) (ended []string, listens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range revoked {
		h := s.keys[k]
		if h == nil {
			continue
		}
		// Each round ends the session at the front, which leaves the list.
		for h.lru.Len() > 0 {
			sess := h.lru.Front().Value.(*session)
			s.endLocked(sess)
			ended = append(ended, sess.id)
		}
	}
	for _, l := range s.listens {
		if l.revoked || !l.owner.heldBy(revoked) {
			continue
		}
		l.revoked = true
		l.cancel() // serveListen writes the final result; done() drops the entry
		listens++
	}
	s.revokedSessions.Add(int64(len(ended)))
	s.revokedListens.Add(int64(listens))
	return ended, listens
}

// heldBy reports whether one of o's keys is in keys.
func (o owner) heldBy(keys map[string]bool) bool {
	for _, k := range o.keys() {
		if keys[k] {
			return true
		}
	}
	return false
}
