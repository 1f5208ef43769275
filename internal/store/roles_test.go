package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

func TestServerAdminKeyHasNoProject(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	alpha := ensure(t, s, "acme", "alpha")
	gamma := ensure(t, s, "other", "gamma")
	_, alphaKey, err := s.CreateKey(ctx, alpha, "alice", memory.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	token, srv, err := s.CreateServerAdminKey(ctx, "ops")
	if err != nil || srv.Role != memory.RoleServerAdmin || srv.Project != (memory.ProjectRef{}) {
		t.Fatalf("CreateServerAdminKey = %+v, %v", srv, err)
	}
	got, err := s.KeyByToken(ctx, token)
	if err != nil || got.ID != srv.ID || !got.ServerAdmin() || got.Project != (memory.ProjectRef{}) || got.ProjectLabel() != "server" {
		t.Fatalf("KeyByToken = %+v, %v", got, err)
	}
	if _, _, err := s.CreateServerAdminKey(ctx, "bad\nname"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("server-admin key with a bad agent name: %v, want invalid", err)
	}
	if _, _, err := s.CreateKey(ctx, alpha, "sneaky", memory.RoleServerAdmin); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("CreateKey with the server-admin role: %v, want invalid", err)
	}

	all, err := s.ListKeys(ctx)
	if err != nil || len(all) != 2 || all[1].Project != (memory.ProjectRef{}) {
		t.Fatalf("ListKeys = %+v, %v", all, err)
	}
	if keys, err := s.ListProjectKeys(ctx, alpha); err != nil || len(keys) != 1 || keys[0].ID != alphaKey.ID {
		t.Fatalf("ListProjectKeys(alpha) = %+v, %v", keys, err)
	}

	// A project-bound revoke reaches only that project's keys.
	wantCode(t, s.RevokeProjectKey(ctx, gamma, alphaKey.ID), memory.CodeNotFound)
	wantCode(t, s.RevokeProjectKey(ctx, alpha, srv.ID), memory.CodeNotFound)
	if _, err := s.KeyByToken(ctx, token); err != nil {
		t.Fatalf("the server-admin key stopped working after a refused revoke: %v", err)
	}
	if err := s.RevokeProjectKey(ctx, alpha, alphaKey.ID); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.KeyByID(ctx, alphaKey.ID); !k.Revoked {
		t.Error("RevokeProjectKey did not revoke its own project's key")
	}

	// The schema itself keeps the invariant: a project for every key but a
	// server-admin one, and none for that.
	w := s.control.writer
	now := time.Now().UnixNano()
	for name, stmt := range map[string]string{
		"server-admin with a project": `INSERT INTO keys (workspace, project, agent, role, hash, created_at) VALUES ('acme', 'alpha', 'x', 'server-admin', 'h1', ?)`,
		"admin without a project":     `INSERT INTO keys (workspace, project, agent, role, hash, created_at) VALUES (NULL, NULL, 'x', 'admin', 'h2', ?)`,
		"half a project":              `INSERT INTO keys (workspace, project, agent, role, hash, created_at) VALUES ('acme', NULL, 'x', 'read', 'h3', ?)`,
	} {
		if _, err := w.ExecContext(ctx, stmt, now); err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("%s: %v, want a CHECK constraint failure", name, err)
		}
	}
}

// TestControlMigrationKeepsKeys: a control database of schema 1 (before
// server-admin keys) opens with its keys intact and working.
func TestControlMigrationKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadMigrations(schemaControl)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", writerDSN(filepath.Join(dir, controlFile), "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	token := "munin_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, stmt := range []string{
		ms[0].sql,
		"PRAGMA user_version = 1",
		`INSERT INTO workspaces (name, created_at) VALUES ('acme', 1)`,
		`INSERT INTO projects (workspace, name, created_at) VALUES ('acme', 'alpha', 1)`,
		`INSERT INTO keys (workspace, project, agent, role, hash, created_at, revoked_at) VALUES ('acme', 'alpha', 'alice', 'admin', '` + memory.HashToken(token) + `', 1, NULL)`,
		`INSERT INTO keys (workspace, project, agent, role, hash, created_at, revoked_at) VALUES ('acme', 'alpha', 'gone', 'read', 'h', 1, 2)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dir)
	ctx := context.Background()
	k, err := s.KeyByToken(ctx, token)
	if err != nil || k.Agent != "alice" || k.Role != memory.RoleAdmin || k.Project != (memory.ProjectRef{Workspace: "acme", Project: "alpha"}) {
		t.Fatalf("key after the migration = %+v, %v", k, err)
	}
	keys, err := s.ListKeys(ctx)
	if err != nil || len(keys) != 2 || !keys[1].Revoked {
		t.Fatalf("keys after the migration = %+v, %v", keys, err)
	}
	var v int
	if err := rawDB(t, filepath.Join(dir, controlFile)).QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(ms) {
		t.Fatalf("user_version %d (%v), want %d", v, err, len(ms))
	}
	if _, _, err := s.CreateServerAdminKey(ctx, "ops"); err != nil {
		t.Fatalf("server-admin key after the migration: %v", err)
	}
}
