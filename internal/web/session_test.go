package web

import (
	"strconv"
	"sync"
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

// keysOf is the caller of read keys with these ids, key id i of project
// w/p<i>.
func keysOf(ids ...int64) memory.Caller {
	var keys []memory.Key
	for _, id := range ids {
		keys = append(keys, keyOf(id, "p"+strconv.FormatInt(id, 10)).First())
	}
	return memory.NewCaller(keys...)
}

// TestMultiKeySessionCountsForEachKey: a session with several keys counts
// against the limit of each of its keys and of each of its projects, at
// sign-in and when a key is added: signing in again and again with any of
// its keys cannot grow the table past the limits, and sessions holding none
// of those keys stay.
func TestMultiKeySessionCountsForEachKey(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, 24*time.Hour, func() time.Time { return now })
	s.perKey, s.perProject, s.total = 2, 3, 100
	tick := func() { now = now.Add(time.Millisecond) }
	bystander := s.create(keysOf(9))
	tick()
	both := s.create(keysOf(1, 2))
	tick()
	s.create(keysOf(2))
	tick()
	s.create(keysOf(2)) // the third session holding key 2: the oldest of them goes
	if _, ok := s.m[both.id]; ok {
		t.Error("the two-key session did not count for its second key")
	}
	if n, _ := s.leastRecentLocked(nil, func(o *session) bool { return o.holdsKey(2) }); n != s.perKey {
		t.Errorf("%d sessions hold key 2, want %d", n, s.perKey)
	}

	// Adding a key counts as signing in with it.
	tick()
	a := s.create(keysOf(3))
	tick()
	b := s.create(keysOf(3))
	tick()
	c := s.create(keysOf(4))
	tick()
	c, ok := s.setKeys(c.id, keysOf(4, 3))
	if !ok {
		t.Fatal("setKeys lost the session")
	}
	if _, ok := s.m[a.id]; ok {
		t.Error("adding key 3 to a session did not count against key 3's limit")
	}
	if _, ok := s.m[b.id]; !ok {
		t.Error("adding key 3 dropped more sessions than its limit needs")
	}
	if got := s.m[c.id].keyIDs; len(got) != 2 || got[0] != 4 || got[1] != 3 {
		t.Errorf("session keys %v, want [4 3] in the order added", got)
	}
	// Keys of one project: the project limit counts the session once.
	for i := range 5 {
		tick()
		k := memory.Key{ID: int64(100 + i), Project: memory.ProjectRef{Workspace: "w", Project: "shared"}, Role: memory.RoleRead}
		s.create(memory.NewCaller(k, keyOf(int64(200+i), "own"+strconv.Itoa(i)).First()))
	}
	if n, _ := s.leastRecentLocked(nil, func(o *session) bool { return o.holdsProject("w/shared") }); n != s.perProject {
		t.Errorf("%d sessions hold a key of w/shared, want %d", n, s.perProject)
	}
	if _, ok := s.m[bystander.id]; !ok {
		t.Error("a session holding none of the busy keys was dropped")
	}
	// A revoked key leaves the session; the last one ends it.
	if left, ok := s.dropKeys(c.id, []int64{4}); !ok || len(left.keyIDs) != 1 || left.keyIDs[0] != 3 || left.projects[0] != "w/p3" {
		t.Errorf("after dropping key 4: %+v %v", left, ok)
	}
	if _, ok := s.dropKeys(c.id, []int64{3}); ok {
		t.Error("a session without keys lives on")
	}
	if _, ok := s.m[c.id]; ok {
		t.Error("a session without keys is still in the table")
	}
}

// TestSessionsConcurrentKeyChanges: sign-ins, key changes, revocations and
// lookups of many goroutines keep the table within its limits. Run with -race.
func TestSessionsConcurrentKeyChanges(t *testing.T) {
	s := newSessions(time.Hour, 24*time.Hour, time.Now)
	s.perKey, s.perProject, s.total = 4, 6, 20
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				sess := s.create(keysOf(int64(g%5+1), int64(i%7+1)))
				if moved, ok := s.setKeys(sess.id, keysOf(int64(i%7+1), int64(g%3+10))); ok {
					sess = moved
				}
				s.get(sess.id)
				s.dropKeys(sess.id, []int64{int64(g%3 + 10)})
				s.addFlash(sess.id, "x")
				s.popFlash(sess.id)
			}
		}()
	}
	wg.Wait()
	if len(s.m) > s.total {
		t.Errorf("%d sessions, over the total of %d", len(s.m), s.total)
	}
	for id := int64(1); id <= 12; id++ {
		if n, _ := s.leastRecentLocked(nil, func(o *session) bool { return o.holdsKey(id) }); n > s.perKey {
			t.Errorf("%d sessions hold key %d, over the limit of %d", n, id, s.perKey)
		}
	}
}
