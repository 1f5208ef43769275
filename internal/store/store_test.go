package store

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"munin/internal/memory"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Bad names are rejected before any path is built or file created.
func TestNameValidationBeforeFiles(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	ctx := context.Background()
	bad := []string{"../x", "A", "", "x/y", "-x", ".", "a.db", "_control"}
	for _, name := range bad {
		for _, ref := range []memory.ProjectRef{{Workspace: name, Project: "ok"}, {Workspace: "ok", Project: name}} {
			_, err := s.EnsureProject(ctx, ref)
			wantCode(t, err, memory.CodeInvalid)
			_, err = s.Append(ctx, ref, memory.Write{Slug: "x"})
			wantCode(t, err, memory.CodeInvalid)
		}
		if s.WorkspaceFile(name) != "" {
			t.Fatalf("WorkspaceFile(%q) built a path", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		if n != "_control.db" && n != "_control.db-wal" && n != "_control.db-shm" {
			t.Fatalf("files after rejected names: %v", names)
		}
	}
	if fileExists(filepath.Join(filepath.Dir(dir), "x.db")) {
		t.Fatal("path traversal created ../x.db")
	}
}

func TestOpenOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{Synchronous: "OFF"}); err == nil {
		t.Fatal("synchronous OFF accepted")
	}
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := openAt(t, dir)
	if !fileExists(filepath.Join(dir, "_control.db")) {
		t.Fatal("control database not created in a missing directory")
	}
	var v int
	if err := rawDB(t, filepath.Join(dir, "_control.db")).QueryRow("PRAGMA user_version").Scan(&v); err != nil || v < 1 {
		t.Fatalf("control user_version = %d, %v", v, err)
	}
	ensure(t, s, "w", "p")
	if err := rawDB(t, s.WorkspaceFile("w")).QueryRow("PRAGMA user_version").Scan(&v); err != nil || v < 1 {
		t.Fatalf("workspace user_version = %d, %v", v, err)
	}
}

// Everything survives close and reopen; migrations are not re-applied.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ensure(t, s, "team", "alpha")
	put(t, s, ref, "doc", "one")
	put(t, s, ref, "doc", "two")
	token, _, err := s.CreateKey(ctx, ref, "agent-1", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWriteBudget(ctx, ref, 77); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openAt(t, dir)
	v, latest, err := s2.Get(ctx, ref, "doc", 0)
	if err != nil || v.Content != "two" || latest != 2 {
		t.Fatalf("after reopen: %+v latest %d err %v", v, latest, err)
	}
	if k, err := s2.KeyByToken(ctx, token); err != nil || k.Agent != "agent-1" {
		t.Fatalf("key after reopen: %+v, %v", k, err)
	}
	if p, err := s2.Project(ctx, ref); err != nil || p.WriteBudget != 77 {
		t.Fatalf("project after reopen: %+v, %v", p, err)
	}
	if created, err := s2.EnsureProject(ctx, ref); err != nil || created {
		t.Fatalf("EnsureProject after reopen: created %v err %v", created, err)
	}
	if r := put(t, s2, ref, "doc", "three"); r.Version != 3 {
		t.Fatalf("version after reopen = %d, want 3", r.Version)
	}
}
