package mcpserver

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/limit"
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

// The limits of a project — all its keys together, however many its admin
// mints. The per-key limits alone are multiplied by minting keys (157 read
// keys of one project filled the whole session table in 3.4 s, and every
// other project's initialize was refused).
const (
	// DefaultSessionOpenRate: the sessions one project opens per second,
	// with bursts of SessionOpenBurstSeconds times it (100: a team's agents
	// starting at once). 160 keys of one project opening sessions as fast
	// as their request rate allowed opened 6,500 a second and took a core
	// from the other projects (hostile-load test, attack 13).
	DefaultSessionOpenRate  = 20
	SessionOpenBurstSeconds = 5
	// ProjectSessionShare: one project holds at most 1/ProjectSessionShare
	// of the server's session table (MaxSessions/8: 1,250 of 10,000). A
	// session is charged to the project of the caller's first key (a
	// server-admin key's zero project counts as one project of its own).
	// A project at its share that opens one more ends its own least
	// recently used session, as a key at its limit does, so a project that
	// floods only ever ends its own sessions; the table fills only when at
	// least eight projects hold their share, and a project below its share
	// is refused only then. 1,250 is still twenty agents at their
	// per-key limit of 64.
	ProjectSessionShare = 8
	// ProjectStreamKeys: the keys of one project together hold at most
	// ProjectStreamKeys times one key's open GET streams (32 by default).
	// Each open stream holds a connection and a goroutine for as long as the
	// client likes; four keys' worth serves a team whose agents mostly call
	// tools and leaves the rest to other projects. The excess is refused
	// with 429, like a key's.
	ProjectStreamKeys = 4
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
	// project is the project the session is charged to: that of the first
	// key of the caller who opened it.
	project memory.ProjectRef
	// lru holds the session's element in the list of each of its holders,
	// in the order of holdersLocked (its keys, then its project); the front
	// of a list is the most recently used.
	lru     []*list.Element
	streams map[uint64]context.CancelFunc
}

// holder is the sessions one key or one project holds.
type holder struct {
	lru     list.List // of *session
	pending int       // initializes admitted but not yet given an id
}

func (h *holder) empty() bool { return h.lru.Len() == 0 && h.pending == 0 }

// Reasons a session or stream is refused.
var (
	errUnknownSession    = errors.New("unknown session")
	errSessionsFull      = errors.New("server session limit reached")
	errOpeningTooMany    = errors.New("key opens too many sessions at once")
	errProjectOpening    = errors.New("project opens too many sessions at once")
	errStreamsFull       = errors.New("key stream limit reached")
	errProjectStreamFull = errors.New("project stream limit reached")
)

// sessionIDs issues session ids and is the one record of which sessions are
// live and whose they are. mcp-go calls it through sessionResolver; the
// HTTP gate (gate.go) checks every id against it before mcp-go sees the
// request, so mcp-go never keeps state for an id Munin did not issue.
// Unlike mcp-go's default manager it keeps nothing of ended sessions: a
// well-formed id it does not know is reported as terminated (404, "start a
// new session").
type sessionIDs struct {
	maxTotal, maxPerKey, maxPerProject int

	mu       sync.Mutex
	live     map[string]*session
	keys     map[string]*holder // by key id
	projects map[memory.ProjectRef]*holder
	pending  int
	// onEnd, when set, is called (with mu held: it must not call back into
	// sessionIDs) with the id of every session that ends, however it ends
	// (DELETE, idle expiry, eviction), so that state kept beside a session,
	// such as its resource subscriptions, ends with it.
	onEnd func(id string)
	// nextStream numbers the streams of a session and the listen streams.
	nextStream uint64
	// listens are the open subscriptions/listen streams (protocol
	// 2026-07-28: no session holds them); listensClosed is set once the
	// server closes (see openListen).
	listens       map[uint64]*listenEntry
	listensClosed bool

	// keyStreams and projectStreams count open GET and listen streams (see
	// openStream, openListen).
	keyStreams     *limit.Keyed[string]
	projectStreams *limit.Keyed[memory.ProjectRef]
	// opens is each project's rate of new sessions (nil: none).
	opens *limit.Keyed[memory.ProjectRef]

	open atomic.Int64 // len(live), readable without the lock

	// checks are the intervals of the revocation sweep and the listen
	// keep-alive (sessions_revoke.go).
	checks StreamChecks
	// The revocation sweep (watchRevocation): its timer is armed while
	// watched streams are open (guarded by mu; sweepGen tells a stale
	// timer's run from the current one's); sweepMu is held while a sweep
	// runs, so that the last stream and Close can wait for it; sweeps
	// counts the sweeps done, for tests.
	watched    int
	sweepTimer *time.Timer
	sweepGen   uint64
	sweepMu    sync.Mutex
	sweeps     atomic.Int64

	// Counters for the metrics.
	unknown, evicted, refusedFull, refusedStreams atomic.Int64
	// revokedSessions and revokedListens count what the revocation sweep
	// ended.
	revokedSessions, revokedListens atomic.Int64
}

func newSessionIDs(maxTotal, maxPerKey, maxStreams int, openRate float64, checks StreamChecks) *sessionIDs {
	return &sessionIDs{
		checks:   checks.withDefaults(),
		maxTotal: maxTotal, maxPerKey: maxPerKey, maxPerProject: max(1, maxTotal/ProjectSessionShare),
		live: make(map[string]*session), keys: make(map[string]*holder), projects: make(map[memory.ProjectRef]*holder),
		keyStreams:     limit.New[string](limit.Rule{InFlight: maxStreams}, nil),
		projectStreams: limit.New[memory.ProjectRef](limit.Rule{InFlight: ProjectStreamKeys * maxStreams}, nil),
		opens: limit.New[memory.ProjectRef](limit.Rule{Rate: openRate,
			Burst: int(max(1, SessionOpenBurstSeconds*openRate))}, nil),
	}
}

// holdersLocked returns the holders a session of who charged to project p
// counts for, made if new: each of who's keys, then p. The last one's limit
// is maxPerProject, the others' maxPerKey.
func (s *sessionIDs) holdersLocked(who owner, p memory.ProjectRef) []*holder {
	ids := who.keys()
	out := make([]*holder, 0, len(ids)+1)
	for _, id := range ids {
		out = append(out, holderIn(s.keys, id))
	}
	return append(out, holderIn(s.projects, p))
}

func holderIn[K comparable](m map[K]*holder, k K) *holder {
	h := m[k]
	if h == nil {
		h = &holder{}
		m[k] = h
	}
	return h
}

// dropIfEmptyLocked forgets the holders of who's keys and of p that hold
// nothing, so that memory follows the live sessions.
func (s *sessionIDs) dropIfEmptyLocked(who owner, p memory.ProjectRef) {
	for _, id := range who.keys() {
		if h := s.keys[id]; h != nil && h.empty() {
			delete(s.keys, id)
		}
	}
	if h := s.projects[p]; h != nil && h.empty() {
		delete(s.projects, p)
	}
}

// ticket is a place for one new session, taken by admit before mcp-go
// handles an initialize and turned into a live session by Generate.
type ticket struct {
	owner   owner
	project memory.ProjectRef
	used    bool
	id      string // the session Generate opened on it
}

// admit reserves a session for who, charged to project p. For each of who's
// keys that already holds its limit, and for p at its share, the least
// recently used session of that key or project (whoever of it opened it) is
// ended and its id returned in evicted, even when admit then refuses: the
// caller must drop mcp-go's state for each. The ticket must be released
// after the request, whether Generate used it or not.
func (s *sessionIDs) admit(who owner, p memory.ProjectRef) (t *ticket, evicted []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.holdersLocked(who, p)
	for i, h := range hs {
		limit, busy := s.maxPerKey, errOpeningTooMany
		if i == len(hs)-1 {
			limit, busy = s.maxPerProject, errProjectOpening
		}
		// Each round ends a live session, so the loop is bounded by them.
		for h.lru.Len()+h.pending >= limit {
			if h.lru.Len() == 0 {
				s.refusedFull.Add(1)
				s.dropIfEmptyLocked(who, p)
				return nil, evicted, busy
			}
			old := h.lru.Back().Value.(*session)
			s.endLocked(old)
			s.evicted.Add(1)
			evicted = append(evicted, old.id)
		}
	}
	if len(s.live)+s.pending >= s.maxTotal {
		s.refusedFull.Add(1)
		s.dropIfEmptyLocked(who, p)
		return nil, evicted, errSessionsFull
	}
	for _, h := range s.holdersLocked(who, p) { // an eviction may have dropped an emptied holder
		h.pending++
	}
	s.pending++
	return &ticket{owner: who, project: p}, evicted, nil
}

// release gives back a ticket Generate did not use.
func (s *sessionIDs) release(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.used {
		return
	}
	t.used = true
	for _, h := range s.holdersLocked(t.owner, t.project) {
		h.pending--
	}
	s.pending--
	s.dropIfEmptyLocked(t.owner, t.project)
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
	sess := &session{id: id, owner: t.owner, project: t.project}
	for _, h := range s.holdersLocked(t.owner, t.project) {
		h.pending--
		sess.lru = append(sess.lru, h.lru.PushFront(sess))
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
	for i, h := range s.holdersLocked(who, sess.project) {
		h.lru.MoveToFront(sess.lru[i])
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

// endLocked forgets a live session and ends its streams.
func (s *sessionIDs) endLocked(sess *session) {
	delete(s.live, sess.id)
	s.open.Add(-1)
	for i, h := range s.holdersLocked(sess.owner, sess.project) {
		h.lru.Remove(sess.lru[i])
	}
	for _, cancel := range sess.streams {
		cancel()
	}
	sess.streams = nil
	s.dropIfEmptyLocked(sess.owner, sess.project)
	if s.onEnd != nil {
		s.onEnd(sess.id)
	}
}

// size reports what the manager holds: live sessions, keys and projects
// with state, and tickets not yet used (for tests: nothing may grow on
// refused ids, and nothing stays once the sessions end).
func (s *sessionIDs) size() (live, keys, projects, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live), len(s.keys), len(s.projects), s.pending
}
