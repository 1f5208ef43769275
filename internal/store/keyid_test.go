package store

import (
	"context"
	"testing"

	"munin/internal/memory"
)

// Key ids are drawn at random (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects): twenty
// keys of one project are not a run of consecutive ids, and every id is in
// 1..2^31-1.
func TestKeyIDsAreNotASequence(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	var ids []int64
	for i := 0; i < 20; i++ {
		_, k, err := s.CreateKey(ctx, ref, "bot", memory.RoleRead)
		if err != nil {
			t.Fatal(err)
		}
		if k.ID < 1 || k.ID > memory.KeyIDMax {
			t.Fatalf("key id %d outside 1..%d", k.ID, memory.KeyIDMax)
		}
		ids = append(ids, k.ID)
	}
	consecutive := 0
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1]+1 {
			consecutive++
		}
	}
	if consecutive == len(ids)-1 {
		t.Fatalf("key ids %v are consecutive: they count the server's keys", ids)
	}
}

// An id that is taken is drawn again, in the same insert loop; a key whose
// every draw is taken fails cleanly and stores nothing.
func TestKeyIDCollisionDrawsAgain(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	_, first, err := s.CreateKey(ctx, ref, "first", memory.RoleRead)
	if err != nil {
		t.Fatal(err)
	}
	draws := 0
	s.hookKeyID = func(drawn int64) int64 {
		draws++
		if draws == 1 {
			return first.ID // the first draw collides
		}
		return drawn
	}
	token, second, err := s.CreateKey(ctx, ref, "second", memory.RoleWrite)
	if err != nil {
		t.Fatalf("create after a collision: %v", err)
	}
	if draws != 2 || second.ID == first.ID {
		t.Fatalf("draws = %d, ids %d and %d; want a second draw and another id", draws, first.ID, second.ID)
	}
	if got, err := s.KeyByToken(ctx, token); err != nil || got.ID != second.ID || got.Agent != "second" {
		t.Fatalf("KeyByToken = %+v, %v; want key %d of second", got, err, second.ID)
	}

	draws = 0
	s.hookKeyID = func(int64) int64 { draws++; return first.ID }
	if _, _, err := s.CreateKey(ctx, ref, "third", memory.RoleRead); err == nil {
		t.Fatal("created a key although every id drawn was taken")
	}
	if draws != memory.KeyIDTries {
		t.Fatalf("draws = %d, want %d", draws, memory.KeyIDTries)
	}
	keys, err := s.ListProjectKeys(ctx, ref)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys after the failed create = %v, %v; want the first two only", keys, err)
	}
}

// Listings are oldest first, whatever the ids: a key drawn a lower id than
// an older one is listed after it.
func TestListKeysOldestFirst(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	next := int64(1000)
	s.hookKeyID = func(int64) int64 { next--; return next } // 999, 998, 997
	var want []string
	for _, agent := range []string{"a", "b", "c"} {
		if _, _, err := s.CreateKey(ctx, ref, agent, memory.RoleRead); err != nil {
			t.Fatal(err)
		}
		want = append(want, agent)
	}
	for name, list := range map[string]func() ([]memory.Key, error){
		"ListKeys":        func() ([]memory.Key, error) { return s.ListKeys(ctx) },
		"ListProjectKeys": func() ([]memory.Key, error) { return s.ListProjectKeys(ctx, ref) },
	} {
		keys, err := list()
		if err != nil || len(keys) != len(want) {
			t.Fatalf("%s = %v, %v", name, keys, err)
		}
		for i, k := range keys {
			if k.Agent != want[i] {
				t.Fatalf("%s lists %s at %d (id %d), want %s: oldest first", name, k.Agent, i, k.ID, want[i])
			}
		}
	}
}

// KeyCounts counts creations in the window (revoked keys too), their
// oldest, and the live keys, of one project only.
func TestKeyCounts(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	alpha := ensure(t, s, "team", "alpha")
	gamma := ensure(t, s, "other", "gamma")
	var keys []memory.Key
	for i := 0; i < 3; i++ {
		_, k, err := s.CreateKey(ctx, alpha, "bot", memory.RoleRead)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if _, _, err := s.CreateKey(ctx, gamma, "bot", memory.RoleRead); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	c, err := s.KeyCounts(ctx, alpha, keys[1].CreatedAt)
	if err != nil || c.CreatedSince != 2 || c.Live != 2 || !c.OldestSince.Equal(keys[1].CreatedAt) {
		t.Fatalf("KeyCounts since the second key = %+v, %v; want 2 created since %v, 2 live", c, err, keys[1].CreatedAt)
	}
	c, err = s.KeyCounts(ctx, alpha, keys[0].CreatedAt)
	if err != nil || c.CreatedSince != 3 || c.Live != 2 || !c.OldestSince.Equal(keys[0].CreatedAt) {
		t.Fatalf("KeyCounts since the first key = %+v, %v; want 3 (the revoked one too), 2 live", c, err)
	}
	c, err = s.KeyCounts(ctx, ensure(t, s, "team", "empty"), keys[0].CreatedAt)
	if err != nil || c != (memory.KeyCounts{}) {
		t.Fatalf("KeyCounts of a project without keys = %+v, %v", c, err)
	}
}
