package web

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sync"
	"time"

	"munin/internal/memory"
)

// Session lifetimes: a session ends after idleTimeout without a request,
// and in any case maxAge after sign-in.
const (
	defaultIdleTimeout = 8 * time.Hour
	defaultMaxAge      = 24 * time.Hour
	// maxSessionsPerKey bounds the sessions that hold one key; beyond it the
	// least recently used of them is dropped, so signing in again and again
	// with one key cannot push other people's sessions out. A session with
	// several keys counts once for each of its keys.
	maxSessionsPerKey = 32
	// maxSessionsPerProject bounds the sessions that hold a key of one
	// project (all server-admin keys count as one project); beyond it the
	// least recently used of them is dropped. A project admin can make any
	// number of keys of its project and sign in with each: that must cost
	// sessions holding its own project's keys, never a session without one.
	// A session with keys of several projects counts once in each.
	maxSessionsPerProject = 256
	// maxSessions bounds memory; beyond it the least recently used session
	// of any key is dropped. It is reached only when about 40 projects use
	// all their sessions at once, so it is a safety net. A session holds at
	// most memory.MaxCallerKeys key ids, so the table stays small.
	maxSessions = 10_000
)

// session is a signed-in browser. It holds the ids of its keys, never a key
// itself: each key is looked up by id on every request, so a revoked key
// leaves its sessions at once. Its slices are replaced, never changed in
// place, so the copies get returns stay as they were.
type session struct {
	id string // 256 random bits, the cookie value
	// keyIDs are the session's keys, one per project, in the order the
	// person added them (the first is the caller's first key); projects[i]
	// is the project label of keyIDs[i], for maxSessionsPerProject.
	keyIDs   []int64
	projects []string
	csrf     string // per-session token every state-changing form carries
	created  time.Time
	lastSeen time.Time
	flash    string // one message for the next page (after a redirect)
}

// holdsKey reports whether the session holds key id.
func (s *session) holdsKey(id int64) bool { return slices.Contains(s.keyIDs, id) }

// holdsProject reports whether the session holds a key of project (a label).
func (s *session) holdsProject(project string) bool { return slices.Contains(s.projects, project) }

// sessions is the server-side session table, in memory: a restart signs
// everyone out, which is the safe direction to fail.
type sessions struct {
	idle, max time.Duration
	now       func() time.Time
	// perKey, perProject and total are maxSessionsPerKey,
	// maxSessionsPerProject and maxSessions; tests lower them.
	perKey, perProject, total int

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(idle, max time.Duration, now func() time.Time) *sessions {
	return &sessions{idle: idle, max: max, now: now, perKey: maxSessionsPerKey, perProject: maxSessionsPerProject, total: maxSessions, m: map[string]*session{}}
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [32]byte
	// crypto/rand.Read never fails on the platforms Go supports (it panics
	// rather than return weak bytes).
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for the caller's keys; a fresh id on every
// sign-in prevents session fixation.
func (s *sessions) create(c memory.Caller) session {
	now := s.now()
	sess := &session{id: randomToken(), csrf: randomToken(), created: now, lastSeen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	s.m[sess.id] = sess
	s.setKeysLocked(sess, c)
	s.makeRoomLocked(sess, func(*session) bool { return true }, s.total)
	return *sess
}

// setKeys makes the caller's keys the keys of session id (after a key was
// added or removed) and moves the session to a fresh id and CSRF token, as
// a sign-in does: a session id someone planted in a browser before its
// person added their key must not reach that key's project. It returns the
// session under its new id; false if the session has ended meanwhile.
func (s *sessions) setKeys(id string, c memory.Caller) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok {
		return session{}, false
	}
	delete(s.m, id)
	sess.id, sess.csrf = randomToken(), randomToken()
	s.m[sess.id] = sess
	s.setKeysLocked(sess, c)
	return *sess, true
}

// setKeysLocked gives sess the caller's keys. Each key or project new to
// sess counts against its limits: another session holding it may have to
// make room, the least recently used first.
func (s *sessions) setKeysLocked(sess *session, c memory.Caller) {
	keys := c.Keys() // one per project
	ids := make([]int64, len(keys))
	projects := make([]string, len(keys))
	for i, k := range keys {
		ids[i], projects[i] = k.ID, k.ProjectLabel()
	}
	for _, id := range ids {
		if !sess.holdsKey(id) {
			s.makeRoomLocked(sess, func(o *session) bool { return o.holdsKey(id) }, s.perKey)
		}
	}
	for _, p := range projects {
		if !sess.holdsProject(p) {
			s.makeRoomLocked(sess, func(o *session) bool { return o.holdsProject(p) }, s.perProject)
		}
	}
	sess.keyIDs, sess.projects = ids, projects
}

// dropKeys removes keys (revoked ones) from session id; a session left
// without keys ends. It returns what is left, and false if nothing is.
func (s *sessions) dropKeys(id string, gone []int64) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok {
		return session{}, false
	}
	var ids []int64
	var projects []string
	for i, kid := range sess.keyIDs {
		if !slices.Contains(gone, kid) {
			ids, projects = append(ids, kid), append(projects, sess.projects[i])
		}
	}
	sess.keyIDs, sess.projects = ids, projects
	if len(ids) == 0 {
		delete(s.m, id)
		return session{}, false
	}
	return *sess, true
}

// makeRoomLocked drops the least recently used sessions other than self
// that match until fewer than limit do, so self can join them.
func (s *sessions) makeRoomLocked(self *session, match func(*session) bool, limit int) {
	for n, oldest := s.leastRecentLocked(self, match); n >= limit && oldest != nil; n-- {
		delete(s.m, oldest.id)
		_, oldest = s.leastRecentLocked(self, match)
	}
}

// leastRecentLocked counts the sessions other than self that match and
// returns the one of them used least recently.
func (s *sessions) leastRecentLocked(self *session, match func(*session) bool) (n int, oldest *session) {
	for _, o := range s.m {
		if o == self || !match(o) {
			continue
		}
		n++
		if oldest == nil || o.lastSeen.Before(oldest.lastSeen) {
			oldest = o
		}
	}
	return n, oldest
}

// get returns a live session and marks it used; an expired one is removed.
func (s *sessions) get(id string) (session, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok {
		return session{}, false
	}
	if s.expired(sess, now) {
		delete(s.m, id)
		return session{}, false
	}
	sess.lastSeen = now
	return *sess, true
}

func (s *sessions) expired(sess *session, now time.Time) bool {
	return now.Sub(sess.lastSeen) >= s.idle || now.Sub(sess.created) >= s.max
}

// sweepLocked drops expired sessions; it runs on sign-in, which is rare
// enough that a full scan costs nothing.
func (s *sessions) sweepLocked(now time.Time) {
	for id, sess := range s.m {
		if s.expired(sess, now) {
			delete(s.m, id)
		}
	}
}

// delete ends a session (sign-out, or its key was revoked).
func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// setFlash leaves a message for the session's next page.
func (s *sessions) setFlash(id, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.m[id]; ok {
		sess.flash = msg
	}
}

// addFlash adds a message to the session's next page.
func (s *sessions) addFlash(id, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.m[id]; ok {
		if sess.flash != "" {
			msg = sess.flash + " " + msg
		}
		sess.flash = msg
	}
}

// popFlash returns and clears the session's message.
func (s *sessions) popFlash(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[id]
	if !ok {
		return ""
	}
	msg := sess.flash
	sess.flash = ""
	return msg
}
