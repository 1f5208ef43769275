package mcpserver

import (
	"context"

	"munin/internal/limit"
)

// openStream records a GET stream of who on session id; cancel ends it when
// the session ends. The stream counts for each of who's keys and for the
// project the session is charged to, all or none (limit.Acquire): a stream
// refused by its project's limit leaves its keys' counts as they were.
// done must be called when the stream ends.
func (s *sessionIDs) openStream(id string, who owner, cancel context.CancelFunc) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.live[id]
	if !ok || sess.owner != who {
		s.unknown.Add(1)
		return nil, errUnknownSession
	}
	keys := who.keys()
	slots := make([]limit.Slot, 0, len(keys)+1)
	for _, k := range keys {
		slots = append(slots, s.keyStreams.Slot(k))
	}
	slots = append(slots, s.projectStreams.Slot(sess.project))
	release, refused := limit.Acquire(slots...)
	if refused != nil {
		s.refusedStreams.Add(1)
		if refused.Index == len(keys) {
			return nil, errProjectStreamFull
		}
		return nil, errStreamsFull
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
