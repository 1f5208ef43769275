package store

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

func TestKeys(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	token, key, err := s.CreateKey(ctx, ref, "claude", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^munin_[A-Za-z0-9_-]{43}$`).MatchString(token) {
		t.Fatalf("token %q has the wrong format", token)
	}
	if key.ID == 0 || key.Agent != "claude" || key.Role != memory.RoleWrite || key.Project != ref {
		t.Fatalf("key = %+v", key)
	}

	// Only the hash is stored: no column of any key row contains the token.
	rows, err := rawDB(t, s.control.path).Query(`SELECT id, workspace, project, agent, role, hash, created_at,
		coalesce(last_used_at, ''), coalesce(revoked_at, '') FROM keys`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		cols := make([]string, 9)
		ptrs := make([]any, 9)
		for i := range cols {
			ptrs[i] = &cols[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			if strings.Contains(c, token) || strings.Contains(c, strings.TrimPrefix(token, memory.KeyPrefix)) {
				t.Fatalf("token stored in the keys table: %v", cols)
			}
		}
		if cols[5] != memory.HashToken(token) || len(cols[5]) != 64 {
			t.Fatalf("hash column = %q, want hex sha256 of the token", cols[5])
		}
	}
	rows.Close()

	got, err := s.KeyByToken(ctx, token)
	if err != nil || got.ID != key.ID || got.Project != ref || got.LastUsedAt == nil {
		t.Fatalf("KeyByToken = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "munin_nope", token + "x"} {
		_, err := s.KeyByToken(ctx, bad)
		wantCode(t, err, memory.CodeUnauthorized)
	}

	token2, _, err := s.CreateKey(ctx, ref, "reader bot", memory.RoleRead)
	if err != nil || token2 == token {
		t.Fatalf("second key: %v (same token: %v)", err, token2 == token)
	}
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	_, err = s.KeyByToken(ctx, token)
	wantCode(t, err, memory.CodeUnauthorized)
	if memory.PublicMessage(err) != "unauthorized: unknown or revoked key" {
		t.Fatalf("message = %q", memory.PublicMessage(err))
	}
	if _, err := s.KeyByToken(ctx, token2); err != nil {
		t.Fatalf("other key after revoke: %v", err)
	}
	wantCode(t, s.RevokeKey(ctx, 0), memory.CodeNotFound) // no key has id 0

	keys, err := s.ListKeys(ctx)
	if err != nil || len(keys) != 2 || !keys[0].Revoked || keys[1].Revoked || keys[0].ID != key.ID {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
}

func TestCreateKeyRejects(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	cases := []struct {
		name  string
		ref   memory.ProjectRef
		agent string
		role  memory.Role
		code  memory.Code
	}{
		{"missing project", memory.ProjectRef{Workspace: "team", Project: "nope"}, "a", memory.RoleRead, memory.CodeNotFound},
		{"missing workspace", memory.ProjectRef{Workspace: "nope", Project: "alpha"}, "a", memory.RoleRead, memory.CodeNotFound},
		{"empty agent", ref, "", memory.RoleRead, memory.CodeInvalid},
		{"long agent", ref, strings.Repeat("a", memory.MaxAgent+1), memory.RoleRead, memory.CodeInvalid},
		{"control char", ref, "a\nb", memory.RoleRead, memory.CodeInvalid},
		{"bad utf8", ref, "a\xffb", memory.RoleRead, memory.CodeInvalid},
		{"bad role", ref, "a", memory.Role("root"), memory.CodeInvalid},
		{"bad name", memory.ProjectRef{Workspace: "../x", Project: "alpha"}, "a", memory.RoleRead, memory.CodeInvalid},
	}
	for _, c := range cases {
		_, _, err := s.CreateKey(ctx, c.ref, c.agent, c.role)
		if memory.ErrorCode(err) != c.code {
			t.Errorf("%s: err %v, want %q", c.name, err, c.code)
		}
	}
	if keys, _ := s.ListKeys(ctx); len(keys) != 0 {
		t.Fatalf("rejected calls created %d keys", len(keys))
	}
}

func TestProjects(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := memory.ProjectRef{Workspace: "team", Project: "alpha"}

	// Concurrent EnsureProject: exactly one creates.
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.EnsureProject(ctx, ref)
			if err != nil {
				t.Error(err)
			}
			if c {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("%d concurrent EnsureProject calls reported created, want 1", created)
	}
	ensure(t, s, "team", "beta")
	ensure(t, s, "aaa", "zeta")

	ps, err := s.ListProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Ref.String())
	}
	if strings.Join(names, ",") != "aaa/zeta,team/alpha,team/beta" {
		t.Fatalf("ListProjects = %v", names)
	}

	p, err := s.Project(ctx, ref)
	if err != nil || p.WriteBudget != 0 || p.CreatedAt.IsZero() {
		t.Fatalf("Project = %+v, %v", p, err)
	}
	if err := s.SetWriteBudget(ctx, ref, 250); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Project(ctx, ref); p.WriteBudget != 250 {
		t.Fatalf("budget = %d, want 250", p.WriteBudget)
	}
	wantCode(t, s.SetWriteBudget(ctx, ref, -1), memory.CodeInvalid)
	wantCode(t, s.SetWriteBudget(ctx, memory.ProjectRef{Workspace: "team", Project: "nope"}, 5), memory.CodeNotFound)
	_, err = s.Project(ctx, memory.ProjectRef{Workspace: "team", Project: "nope"})
	wantCode(t, err, memory.CodeNotFound)
}

// TestKeyCacheSeesRevocation: keys are served from memory, yet a key revoked
// by this store is refused by the very next lookup, and one revoked by
// another process on the same files (the CLI opens its own store) once the
// cache has rechecked the file.
func TestKeyCacheSeesRevocation(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	tokA, keyA, err := s.CreateKey(ctx, ref, "a", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	tokB, keyB, err := s.CreateKey(ctx, ref, "b", memory.RoleRead)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, tok := range []string{tokA, tokB} {
			if _, err := s.KeyByToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each key was read once; writing last_used_at changed the file, so a
	// few more reads are fine, but not one per call.
	if m := s.keyCache.misses.Load(); m > 4 {
		t.Errorf("%d database lookups for 6 authentications of 2 keys: the cache is not used", m)
	}

	// Revoked here: refused at once, although the key was cached.
	if err := s.RevokeKey(ctx, keyA.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyByToken(ctx, tokA); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("key revoked by this store: %v, want unauthorized", err)
	}

	// Revoked by another process: refused after the next recheck.
	if _, err := s.KeyByToken(ctx, tokB); err != nil {
		t.Fatal(err)
	}
	other := openAt(t, dir)
	if err := other.RevokeKey(ctx, keyB.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(s.keyCache.recheck)
	if _, err := s.KeyByToken(ctx, tokB); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("key revoked by another store, %s later: %v, want unauthorized", s.keyCache.recheck, err)
	}
}

// TestKeyCacheRevocationUnderLoad: while many goroutines authenticate, a
// revocation returns; no lookup that starts after it may succeed, however
// the cache's reads and puts interleave with it.
func TestKeyCacheRevocationUnderLoad(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ref := ensure(t, s, "team", "alpha")
	tok, key, err := s.CreateKey(ctx, ref, "a", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	var revoked atomic.Bool
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := revoked.Load()
				_, err := s.KeyByToken(ctx, tok)
				if after && err == nil {
					t.Error("a lookup that started after RevokeKey returned still succeeded")
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
}
