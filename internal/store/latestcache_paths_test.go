package store

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"munin/internal/memory"
)

// warm reads slug's latest version until the cache answers it, and fails
// the test if it does not: what follows then checks a cached value.
func warm(t *testing.T, s *Store, ref memory.ProjectRef, slug string) memory.Version {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.Get(ctx, ref, slug, 0); err != nil {
		t.Fatalf("get %s: %v", slug, err)
	}
	hits := s.latest.hits.Load()
	v, _, err := s.Get(ctx, ref, slug, 0)
	if err != nil || s.latest.hits.Load() != hits+1 {
		t.Fatalf("get %s again: %v, cache hits %d -> %d: not answered from the cache", slug, err, hits, s.latest.hits.Load())
	}
	return v
}

// latestBoth reads slug with Get and with LatestMany and fails the test
// unless both agree on the version.
func latestBoth(t *testing.T, s *Store, ref memory.ProjectRef, slug string) memory.Version {
	t.Helper()
	ctx := context.Background()
	v, latest, err := s.Get(ctx, ref, slug, 0)
	if err != nil || latest != v.Version {
		t.Fatalf("get %s: v%d latest %d, %v", slug, v.Version, latest, err)
	}
	many, err := s.LatestMany(ctx, ref, []string{slug, "absent/slug"})
	if err != nil || many[slug].Version != v.Version || many[slug].SupersededBy != v.SupersededBy {
		t.Fatalf("LatestMany %s: %+v, %v; Get said %+v", slug, many[slug], err, v)
	}
	return v
}

// TestLatestCacheFollowsEveryWritePath: after each way of writing an entry
// (remember, forget, remember again, a supersession by another slug, an
// import, an approved proposal) the next read returns the new state, though
// the old one was cached.
func TestLatestCacheFollowsEveryWritePath(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "one")

	warm(t, s, ref, "a")
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "a", Deleted: true, Agent: "w"}); err != nil {
		t.Fatal(err)
	}
	if v := latestBoth(t, s, ref, "a"); v.Version != 2 || !v.Deleted {
		t.Fatalf("after forget: %+v, want the tombstone v2", v)
	}

	warm(t, s, ref, "a")
	put(t, s, ref, "a", "back")
	if v := latestBoth(t, s, ref, "a"); v.Version != 3 || v.Deleted || v.Content != "back" {
		t.Fatalf("after remembering again: %+v, want live v3", v)
	}

	warm(t, s, ref, "a")
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "b", Title: "b", Content: "replaces a", Agent: "w", Supersedes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if v := latestBoth(t, s, ref, "a"); v.Version != 3 || v.SupersededBy != "b" {
		t.Fatalf("after b superseded a: %+v, want v3 superseded by b", v)
	}

	warm(t, s, ref, "a")
	imported := memory.Version{Slug: "a", Version: 4, Title: "a", Content: "imported", Agent: "old",
		CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if _, err := s.ImportVersions(ctx, ref, []memory.Version{imported}, memory.DefaultMaxContent); err != nil {
		t.Fatal(err)
	}
	if v := latestBoth(t, s, ref, "a"); v.Version != 4 || v.Content != "imported" {
		t.Fatalf("after import: %+v, want the imported v4", v)
	}

	warm(t, s, ref, "a")
	p := propose(t, s, ref, "pia", "a", "proposed")
	if v := latestBoth(t, s, ref, "a"); v.Version != 4 {
		t.Fatalf("a pending proposal changed the latest version: %+v", v)
	}
	warm(t, s, ref, "a")
	if _, err := s.Approve(ctx, ref, p.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if v := latestBoth(t, s, ref, "a"); v.Version != 5 || v.Content != "proposed" {
		t.Fatalf("after approval: %+v, want the approved v5", v)
	}

	// An explicit old version is read from the file, not from the cache.
	warm(t, s, ref, "a")
	if v, latest, err := s.Get(ctx, ref, "a", 1); err != nil || v.Version != 1 || v.Content != "one" || latest != 5 {
		t.Fatalf("get v1: %+v latest %d, %v", v, latest, err)
	}
}

// TestLatestCacheWithoutItsTriggers: if the writer's connection lost its
// temporary triggers (a replaced connection), the batch cannot tell what it
// changed, purges the workspace's cache, and installs them again.
func TestLatestCacheWithoutItsTriggers(t *testing.T) {
	ctx := context.Background()
	s, ref, ws := openWorkspace(t)
	put(t, s, ref, "a", "one")
	warm(t, s, ref, "a")
	_, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		// What a new connection lacks: the temp schema's table and triggers.
		for _, name := range []string{"ei", "eu", "ek", "ed", "vu", "vk", "vd"} {
			if _, err := tx.Exec(`DROP TRIGGER temp.latest_touched_` + name); err != nil {
				return nil, err
			}
		}
		if _, err := tx.Exec(`DROP TABLE temp.latest_touched`); err != nil {
			return nil, err
		}
		return ws.write(tx, ref.Project, memory.Write{Slug: "a", Title: "a", Content: "two", Agent: "w"}, "[]")
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := latestBoth(t, s, ref, "a"); v.Version != 2 {
		t.Fatalf("after a batch without triggers: %+v, want v2", v)
	}
	warm(t, s, ref, "a")
	put(t, s, ref, "a", "three")
	if v := latestBoth(t, s, ref, "a"); v.Version != 3 {
		t.Fatalf("after the triggers were installed again: %+v, want v3", v)
	}
}

// TestLatestCacheNewWriterStartsEmpty: closing a workspace (as a node does
// when its lease moves) forgets its cached versions, and the reopened
// workspace reads the file it finds — here an older copy put in its place
// while it was closed, as a new owner's restore from the replica would.
func TestLatestCacheNewWriterStartsEmpty(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "one")
	if err := s.CloseWorkspace("ws"); err != nil {
		t.Fatal(err)
	}
	path := s.WorkspaceFile("ws")
	older, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	put(t, s, ref, "a", "two")
	if v := warm(t, s, ref, "a"); v.Version != 2 {
		t.Fatalf("cached %+v, want v2", v)
	}
	first, err := s.requireProject(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseWorkspace("ws"); err != nil {
		t.Fatal(err)
	}
	if _, nodes := s.latest.size(); nodes != 0 {
		t.Errorf("%d cache nodes left after the workspace closed", nodes)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, older, 0o600); err != nil {
		t.Fatal(err)
	}

	misses := s.latest.misses.Load()
	if v := latestBoth(t, s, ref, "a"); v.Version != 1 || v.Content != "one" {
		t.Fatalf("after the file was replaced: %+v, want the file's v1", v)
	}
	if s.latest.misses.Load() == misses {
		t.Error("the reopened workspace answered from the cache")
	}
	second, err := s.requireProject(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if second.id == first.id {
		t.Errorf("the reopened workspace has the same cache id %d", first.id)
	}
}
