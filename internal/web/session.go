package web

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// Session lifetimes: a session ends after idleTimeout without a request,
// and in any case maxAge after sign-in.
const (
	defaultIdleTimeout = 8 * time.Hour
	defaultMaxAge      = 24 * time.Hour
	// maxSessionsPerKey bounds the sessions of one key; beyond it that key's
	// least recently used session is dropped, so signing in again and again
	// with one key cannot push other people's sessions out.
	maxSessionsPerKey = 32
	// maxSessionsPerProject bounds the sessions of one project's keys (all
	// server-admin keys count as one project); beyond it that project's
	// least recently used session is dropped. A project admin can make any
	// number of keys of its project and sign in with each: that must cost
	// its own project's sessions, never another project's.
	maxSessionsPerProject = 256
	// maxSessions bounds memory; beyond it the least recently used session
	// of any key is dropped. It is reached only when about 40 projects use
	// all their sessions at once, so it is a safety net.
	maxSessions = 10_000
)

// session is a signed-in browser. It holds the key's id, never the key
// itself: the key is looked up by id on every request, so a revoked key ends
// its sessions at once.
type session struct {
	id       string // 256 random bits, the cookie value
	keyID    int64
	project  string // the key's project label, for maxSessionsPerProject
	csrf     string // per-session token every state-changing form carries
	created  time.Time
	lastSeen time.Time
	flash    string // one message for the next page (after a redirect)
}

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

// create starts a session for a key of project (its label); a fresh id on
// every sign-in prevents session fixation.
func (s *sessions) create(keyID int64, project string) session {
	now := s.now()
	sess := &session{id: randomToken(), keyID: keyID, project: project, csrf: randomToken(), created: now, lastSeen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	if n, oldest := s.leastRecentLocked(func(o *session) bool { return o.keyID == keyID }); n >= s.perKey {
		delete(s.m, oldest.id)
	}
	if n, oldest := s.leastRecentLocked(func(o *session) bool { return o.project == project }); n >= s.perProject {
		delete(s.m, oldest.id)
	}
	if n, oldest := s.leastRecentLocked(func(*session) bool { return true }); n >= s.total {
		delete(s.m, oldest.id)
	}
	s.m[sess.id] = sess
	return *sess
}

// leastRecentLocked counts the sessions that match and returns the one of
// them used least recently.
func (s *sessions) leastRecentLocked(match func(*session) bool) (n int, oldest *session) {
	for _, o := range s.m {
		if !match(o) {
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
