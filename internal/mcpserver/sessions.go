package mcpserver

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
)

// Session limits, used when the Options field of the same name is zero.
const (
	// DefaultSessionIdleTTL is how long an MCP session may stay unused before
	// the server forgets it; the client then gets 404 and opens a new
	// session, as the MCP specification describes.
	DefaultSessionIdleTTL = 30 * time.Minute
	// DefaultMaxSessions bounds the live sessions of the whole server
	// (about 10 KB each). Past it a new session is refused with 429.
	DefaultMaxSessions = 10_000
	// DefaultMaxSessionsPerKey bounds the live sessions of one key, alone
	// or with other keys (a session counts for each key it was opened
	// with). A key opening one more ends its least recently used session,
	// so a client that restarts without DELETE keeps working and a runaway
	// one only harms the holders of its key.
	DefaultMaxSessionsPerKey = 64
	// DefaultMaxStreamsPerKey bounds the open GET (SSE) streams of one key,
	// counted like its sessions; the excess is refused with 429.
	DefaultMaxStreamsPerKey = 8
)

const (
	sessionPrefix = "mcp-session-"
	// sessionIDLen is the length of every id Generate issues; any other
	// length cannot be one of ours.
	sessionIDLen = len(sessionPrefix) + 32
)

// owner is the caller a session belongs to: the sorted ids of its keys
// (memory.Caller.Owner). A session id works only with exactly those keys.
type owner string

func ownerOf(c memory.Caller) owner { return owner(c.Owner()) }

// keys are the ids of the owner's keys. The limits are per key, and a
// session counts for every key it was opened with: counted per set of keys,
// a holder of k keys would get the limit once per set (2^k - 1 of them).
func (o owner) keys() []string { return strings.Split(string(o), ",") }

// session is one live MCP session.
type session struct {
	id    string
	owner owner
	// lru holds the session's element in the list of each of its keys, in
	// the order of owner.keys(); the front is the most recently used.
	lru     []*list.Element
	streams map[uint64]context.CancelFunc
}

// keyState is what one key holds, alone or with other keys.
type keyState struct {
	lru     list.List // of *session
	pending int       // initializes admitted but not yet given an id
	streams int       // open GET streams
}

func (k *keyState) empty() bool { return k.lru.Len() == 0 && k.pending == 0 && k.streams == 0 }

// Reasons a session or stream is refused.
var (
	errUnknownSession = errors.New("unknown session")
	errSessionsFull   = errors.New("server session limit reached")
	errOpeningTooMany = errors.New("key opens too many sessions at once")
	errStreamsFull    = errors.New("key stream limit reached")
)

// sessionIDs issues session ids and is the one record of which sessions are
// live and whose they are. mcp-go calls it through sessionResolver; the
// HTTP gate (gate.go) checks every id against it before mcp-go sees the
// request, so mcp-go never keeps state for an id Munin did not issue.
// Unlike mcp-go's default manager it keeps nothing of ended sessions: a
// well-formed id it does not know is reported as terminated (404, "start a
// new session").
type sessionIDs struct {
	maxTotal, maxPerKey, maxStreams int

	mu         sync.Mutex
	live       map[string]*session
	keys       map[string]*keyState // by key id
	pending    int
	nextStream uint64

	open atomic.Int64 // len(live), readable without the lock

	// Counters for the metrics.
	unknown, evicted, refusedFull, refusedStreams atomic.Int64
}

func newSessionIDs(maxTotal, maxPerKey, maxStreams int) *sessionIDs {
	return &sessionIDs{
		maxTotal: maxTotal, maxPerKey: maxPerKey, maxStreams: maxStreams,
		live: make(map[string]*session), keys: make(map[string]*keyState),
	}
}

// keyStatesLocked returns the state of each of who's keys, made if new.
func (s *sessionIDs) keyStatesLocked(who owner) []*keyState {
	ids := who.keys()
	out := make([]*keyState, len(ids))
	for i, id := range ids {
		k := s.keys[id]
		if k == nil {
			k = &keyState{}
			s.keys[id] = k
		}
		out[i] = k
	}
	return out
}

// dropIfEmptyLocked forgets the states of who's keys that hold nothing.
func (s *sessionIDs) dropIfEmptyLocked(who owner) {
	for _, id := range who.keys() {
		if k := s.keys[id]; k != nil && k.empty() {
			delete(s.keys, id)
		}
	}
}

var _ server.SessionIdManager = (*sessionIDs)(nil)

// ticket is a place for one new session, taken by admit before mcp-go
// handles an initialize and turned into a live session by Generate.
type ticket struct {
	owner owner
	used  bool
	id    string // the session Generate opened on it
}

// admit reserves a session for who. For each of who's keys that already
// holds its limit, the key's least recently used session (alone or with
// other keys) is ended and its id returned in evicted, even when admit then
// refuses: the caller must drop mcp-go's state for each. The ticket must be
// released after the request, whether Generate used it or not.
func (s *sessionIDs) admit(who owner) (t *ticket, evicted []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keyStatesLocked(who)
	for _, k := range ks {
		// Each round ends a live session, so the loop is bounded by them.
		for k.lru.Len()+k.pending >= s.maxPerKey {
			if k.lru.Len() == 0 {
				s.refusedFull.Add(1)
				s.dropIfEmptyLocked(who)
				return nil, evicted, errOpeningTooMany
			}
			old := k.lru.Back().Value.(*session)
			s.endLocked(old)
			s.evicted.Add(1)
			evicted = append(evicted, old.id)
		}
	}
	if len(s.live)+s.pending >= s.maxTotal {
		s.refusedFull.Add(1)
		s.dropIfEmptyLocked(who)
		return nil, evicted, errSessionsFull
	}
	for _, k := range s.keyStatesLocked(who) { // an eviction may have dropped an emptied state
		k.pending++
	}
	s.pending++
	return &ticket{owner: who}, evicted, nil
}

// release gives back a ticket Generate did not use.
func (s *sessionIDs) release(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.used {
		return
	}
	t.used = true
	for _, k := range s.keyStatesLocked(t.owner) {
		k.pending--
	}
	s.pending--
	s.dropIfEmptyLocked(t.owner)
}

// generate issues a new id on ticket t; without a ticket (a path the gate
// does not know of) the id is not recorded, so every later use of it is 404.
func (s *sessionIDs) generate(t *ticket) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id := sessionPrefix + hex.EncodeToString(b[:])
	if t == nil {
		return id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.used { // one ticket, one session
		return id
	}
	t.used, t.id = true, id
	s.pending--
	sess := &session{id: id, owner: t.owner}
	for _, k := range s.keyStatesLocked(t.owner) {
		k.pending--
		sess.lru = append(sess.lru, k.lru.PushFront(sess))
	}
	s.live[id] = sess
	s.open.Add(1)
	return id
}

// use reports whether id is live and belongs to who, and marks it used.
func (s *sessionIDs) use(id string, who owner) bool {
	if len(id) != sessionIDLen {
		s.unknown.Add(1)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.live[id]
	if !ok || sess.owner != who {
		s.unknown.Add(1)
		return false
	}
	for i, k := range s.keyStatesLocked(who) {
		k.lru.MoveToFront(sess.lru[i])
	}
	return true
}

// isLive reports whether id is a live session.
func (s *sessionIDs) isLive(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[id]
	return ok
}

// openStream records a GET stream of who on session id; cancel ends it when
// the session ends. closeStream must follow with the returned number.
func (s *sessionIDs) openStream(id string, who owner, cancel context.CancelFunc) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.live[id]
	if !ok || sess.owner != who {
		s.unknown.Add(1)
		return 0, errUnknownSession
	}
	ks := s.keyStatesLocked(who)
	for _, k := range ks {
		if k.streams >= s.maxStreams {
			s.refusedStreams.Add(1)
			return 0, errStreamsFull
		}
	}
	for _, k := range ks {
		k.streams++
	}
	s.nextStream++
	if sess.streams == nil {
		sess.streams = make(map[uint64]context.CancelFunc)
	}
	sess.streams[s.nextStream] = cancel
	return s.nextStream, nil
}

func (s *sessionIDs) closeStream(id string, who owner, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.live[id]; ok {
		delete(sess.streams, n)
	}
	for _, k := range s.keyStatesLocked(who) {
		k.streams--
	}
	s.dropIfEmptyLocked(who)
}

// endLocked forgets a live session and ends its streams.
func (s *sessionIDs) endLocked(sess *session) {
	delete(s.live, sess.id)
	s.open.Add(-1)
	for i, k := range s.keyStatesLocked(sess.owner) {
		k.lru.Remove(sess.lru[i])
	}
	for _, cancel := range sess.streams {
		cancel()
	}
	sess.streams = nil
	s.dropIfEmptyLocked(sess.owner)
}

// size reports what the manager holds: live sessions, keys with state,
// and tickets not yet used (for tests: nothing may grow on refused ids).
func (s *sessionIDs) size() (live, keys, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live), len(s.keys), s.pending
}

// Generate, Validate and Terminate serve mcp-go where a request is not at
// hand (the idle sweeper, shutdown); requests get a boundIDs.

// Generate issues an id that is never live: sessions are opened only on a
// ticket, through boundIDs.
func (s *sessionIDs) Generate() string { return s.generate(nil) }

// Validate reports a live id as valid, a well-formed unknown one as
// terminated (ended, expired or from before a restart), anything else as
// malformed.
func (s *sessionIDs) Validate(id string) (isTerminated bool, err error) {
	s.mu.Lock()
	_, ok := s.live[id]
	s.mu.Unlock()
	if ok {
		return false, nil
	}
	if rest, ok := strings.CutPrefix(id, sessionPrefix); ok && len(rest) == 32 && isHex(rest) {
		return true, nil
	}
	return false, fmt.Errorf("malformed session id")
}

// Terminate ends a session (DELETE, idle expiry, shutdown).
func (s *sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.live[id]; ok {
		s.endLocked(sess)
	}
	return false, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// boundIDs is the manager as one request sees it: ids belong to its caller,
// and a new session is opened only on the ticket the gate took for it.
type boundIDs struct {
	ids  *sessionIDs
	pass *gatePass
}

// Generate opens the session the gate admitted. An initialize that carries
// a live Mcp-Session-Id of its caller also opens a new session (mcp-go
// ignores the header there); its place is taken here, and if there is none
// the id is not recorded and the gate makes mcp-go forget it.
func (b boundIDs) Generate() string {
	if b.pass.ticket == nil {
		t, evicted, err := b.ids.admit(b.pass.owner)
		b.pass.evicted = append(b.pass.evicted, evicted...)
		if err != nil {
			b.pass.orphan = b.ids.generate(nil)
			return b.pass.orphan
		}
		b.pass.ticket = t
	}
	return b.ids.generate(b.pass.ticket)
}

// Validate is sessionIDs.Validate, with another caller's id as unknown.
func (b boundIDs) Validate(id string) (isTerminated bool, err error) {
	if !b.owns(id) {
		return b.ids.Validate("") // malformed: 404
	}
	return b.ids.Validate(id)
}

// Terminate ends the caller's own session only.
func (b boundIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if !b.owns(id) {
		return true, nil
	}
	return b.ids.Terminate(id)
}

func (b boundIDs) owns(id string) bool {
	b.ids.mu.Lock()
	defer b.ids.mu.Unlock()
	sess, ok := b.ids.live[id]
	return !ok || sess.owner == b.pass.owner // an unknown id is nobody's: Validate says so
}

// sessionResolver hands mcp-go a boundIDs for a request that came through
// the gate, and the bare manager otherwise (the sweeper passes nil).
type sessionResolver struct{ ids *sessionIDs }

// ResolveSessionIdManager implements server.SessionIdManagerResolver.
func (r sessionResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	if req != nil {
		if pass, ok := req.Context().Value(gatePassKey{}).(*gatePass); ok {
			return boundIDs{ids: r.ids, pass: pass}
		}
	}
	return r.ids
}

// SessionStats counts what the session limits did since the start.
type SessionStats struct {
	// Unknown counts requests refused with 404 for an id that is not a live
	// session of the caller.
	Unknown int64
	// Evicted counts sessions ended because one of their keys opened one
	// more than its limit.
	Evicted int64
	// RefusedFull counts new sessions refused with 429 at the server's limit.
	RefusedFull int64
	// RefusedStreams counts GET streams refused with 429 at a key's limit.
	RefusedStreams int64
}

// SessionStats reports the session counters for the metrics.
func (s *Server) SessionStats() SessionStats {
	return SessionStats{
		Unknown:        s.ids.unknown.Load(),
		Evicted:        s.ids.evicted.Load(),
		RefusedFull:    s.ids.refusedFull.Load(),
		RefusedStreams: s.ids.refusedStreams.Load(),
	}
}

// OpenSessions is the number of MCP sessions the server currently keeps.
func (s *Server) OpenSessions() int64 { return s.ids.open.Load() }

// Close stops the idle-session sweeper and ends every session.
func (s *Server) Close(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}
