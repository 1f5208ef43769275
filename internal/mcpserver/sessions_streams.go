package mcpserver

import (
	"context"

	"munin/internal/limit"
	"munin/internal/memory"
)

// streamSlots are the units one stream of who charged to project p
// takes: one for each of who's keys, then one for p.
func (s *sessionIDs) streamSlots(who owner, p memory.ProjectRef) []limit.Slot {
	keys := who.keys()
	slots := make([]limit.Slot, 0, len(keys)+1)
	for _, k := range keys {
		slots = append(slots, s.keyStreams.Slot(k))
	}
	return append(slots, s.projectStreams.Slot(p))
}

// acquireStream takes the units of one stream, all or none (limit.Acquire):
// a stream refused by its project's limit leaves its keys' counts as they
// were.
func (s *sessionIDs) acquireStream(who owner, p memory.ProjectRef) (release func(), err error) {
	slots := s.streamSlots(who, p)
	release, refused := limit.Acquire(slots...)
	if refused != nil {
		s.refusedStreams.Add(1)
		if refused.Index == len(slots)-1 {
			return nil, errProjectStreamFull
		}
		return nil, errStreamsFull
	}
	return release, nil
}

// openStream records a GET stream of who on session id; cancel ends it when
// the session ends. The stream counts for each of who's keys and for the
// project the session is charged to (acquireStream). done must be called
// when the stream ends.
func (s *sessionIDs) openStream(id string, who owner, cancel context.CancelFunc) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.live[id]
	if !ok || sess.owner != who {
		s.unknown.Add(1)
		return nil, errUnknownSession
	}
	release, err := s.acquireStream(who, sess.project)
	if err != nil {
		return nil, err
	}
	s.nextStream++
	n := s.nextStream
	if sess.streams == nil {
		sess.streams = make(map[uint64]context.CancelFunc)
	}
	sess.streams[n] = cancel
	return func() {
		release()
		s.mu.Lock()
		defer s.mu.Unlock()
		if sess.streams != nil {
			delete(sess.streams, n)
		}
	}, nil
}

// openListen records a subscriptions/listen stream (protocol 2026-07-28,
// which has no sessions) of who, charged to project p — the project of the
// caller's first key, as a session is. It counts exactly as a GET stream
// does, against the same bounds: a key's open streams are its GET and
// listen streams together. cancel ends it when the server closes
// (endListens). done must be called when the stream ends.
func (s *sessionIDs) openListen(who owner, p memory.ProjectRef, cancel context.CancelFunc) (done func(), err error) {
	release, err := s.acquireStream(who, p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listensClosed {
		cancel() // the server is closing: the stream ends at once
	}
	s.nextStream++
	n := s.nextStream
	if s.listens == nil {
		s.listens = make(map[uint64]*listenEntry)
	}
	s.listens[n] = &listenEntry{owner: who, cancel: cancel}
	return func() {
		release()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.listens, n)
	}, nil
}

// listenEntry is one open listen stream: whose it is, so that the
// revocation sweep finds it, and how to end it.
type listenEntry struct {
	owner  owner
	cancel context.CancelFunc
	// revoked is set once the revocation sweep ended it (counted once).
	revoked bool
}

// endListens ends every open listen stream, and every one opened later at
// once, and stops the revocation sweep: the server is closing. It returns
// once a sweep in progress is done, so that nothing asks the service after
// Close.
func (s *sessionIDs) endListens() {
	s.mu.Lock()
	s.listensClosed = true
	for _, l := range s.listens {
		l.cancel()
	}
	s.stopSweepLocked()
	s.mu.Unlock()
	s.waitSweep()
}

// openListens is the number of open listen streams.
func (s *sessionIDs) openListens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.listens)
}
