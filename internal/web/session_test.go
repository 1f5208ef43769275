package web

import (
	"strconv"
	"testing"
	"time"

	"munin/internal/memory"
)

// keyOf is the caller of one read key with this id, of project w/<project>.
func keyOf(id int64, project string) memory.Caller {
	return memory.NewCaller(memory.Key{ID: id, Agent: "a" + strconv.FormatInt(id, 10), Project: memory.ProjectRef{Workspace: "w", Project: project}, Role: memory.RoleRead})
}

// TestSignInsOfOneKeyCannotEvictOthers: a key that signs in over and over
// (a read key holder, a script) keeps at most maxSessionsPerKey sessions,
// its most recent ones; other people's sessions stay signed in.
func TestSignInsOfOneKeyCannotEvictOthers(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, 24*time.Hour, func() time.Time { return now })
	s.perKey, s.total = 8, 100
	s.perProject = s.total
	admin := s.create(keyOf(1, "p"))
	var last session
	for range 2 * s.total {
		now = now.Add(time.Millisecond)
		last = s.create(keyOf(2, "p"))
	}
	if _, ok := s.get(admin.id); !ok {
		t.Fatal("the admin's session was evicted by another key's sign-ins")
	}
	if _, ok := s.get(last.id); !ok {
		t.Fatal("the newest session of the busy key was evicted")
	}
	if n, _ := s.leastRecentLocked(nil, func(o *session) bool { return o.holdsKey(2) }); n != s.perKey {
		t.Fatalf("busy key holds %d sessions, want %d", n, s.perKey)
	}
}

// TestSessionTableIsBounded: with many keys the table still stops at
// maxSessions, dropping the least recently used session.
func TestSessionTableIsBounded(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, 24*time.Hour, func() time.Time { return now })
	s.perKey, s.total = 8, 100
	s.perProject = s.total
	first := s.create(keyOf(1000, "p"))
	for i := range 2 * s.total {
		now = now.Add(time.Microsecond)
		s.create(keyOf(int64(i%50)+1, "p"+strconv.Itoa(i%50))) // 50 keys × up to 8 sessions > 100
	}
	if len(s.m) != s.total {
		t.Fatalf("table holds %d sessions, want %d", len(s.m), s.total)
	}
	if _, ok := s.m[first.id]; ok {
		t.Fatal("the least recently used session survived a full table")
	}
}
