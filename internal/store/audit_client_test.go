package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"munin/internal/memory"
)

// auditClients lists "action:agent:client" of ref's audit rows, oldest
// first, as AuditRows reads them.
func auditClients(t *testing.T, s *Store, ref memory.ProjectRef) []string {
	t.Helper()
	rows, err := s.AuditRows(context.Background(), ref, memory.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(rows))
	for _, r := range slices.Backward(rows) {
		out = append(out, r.Action+":"+r.Agent+":"+r.Client)
	}
	return out
}

// feedClients lists the same of the change feed's rows of ref.
func feedClients(t *testing.T, s *Store, ref memory.ProjectRef) []string {
	t.Helper()
	page := feedOf(t, s, ref.Workspace, memory.FeedQuery{}, ref.Project)
	out := make([]string, 0, len(page.Rows))
	for _, r := range page.Rows {
		out = append(out, r.Action+":"+r.Agent+":"+r.Client)
	}
	return out
}

// TestAuditRecordsClient: a write with a client records it in its audit
// row beside the agent — a remember, a forget, a proposal, an approval and
// a rejection (the reviewer's client, not the proposer's) — and the audit
// page and the change feed read it back; a write without one records none.
func TestAuditRecordsClient(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	ctx := context.Background()
	writes := []memory.Write{
		{Slug: "a", Title: "a", Content: "x", Agent: "alice", Client: "Claude"},
		{Slug: "b", Title: "b", Content: "x", Agent: "bob"},
		{Slug: "a", Deleted: true, Agent: "alice", Client: "Claude"},
	}
	for _, w := range writes {
		if _, err := s.Append(ctx, ref, w); err != nil {
			t.Fatal(err)
		}
	}
	prop, err := s.Append(ctx, ref, memory.Write{Slug: "c", Title: "c", Content: "x", Agent: "pia", Client: "ChatGPT", Review: memory.ProposeAlways})
	if err != nil || prop.Proposal == 0 {
		t.Fatalf("propose: %+v, %v", prop, err)
	}
	if _, err := s.Approve(ctx, ref, prop.Proposal, "rita", memory.Write{Client: "Claude"}); err != nil {
		t.Fatal(err)
	}
	drop, err := s.Append(ctx, ref, memory.Write{Slug: "d", Title: "d", Content: "x", Agent: "pia", Review: memory.ProposeAlways})
	if err != nil || drop.Proposal == 0 {
		t.Fatalf("propose: %+v, %v", drop, err)
	}
	if _, err := s.Reject(ctx, ref, drop.Proposal, "rita", "Claude", "no"); err != nil {
		t.Fatal(err)
	}
	want := []string{"remember:alice:Claude", "remember:bob:", "forget:alice:Claude", "propose:pia:ChatGPT", "approve:rita:Claude",
		"propose:pia:", "reject:rita:Claude"}
	if got := auditClients(t, s, ref); !slices.Equal(got, want) {
		t.Errorf("audit rows %q, want %q", got, want)
	}
	if got := feedClients(t, s, ref); !slices.Equal(got, want) {
		t.Errorf("feed rows %q, want %q", got, want)
	}
	// No client is stored as NULL, not as "": a row without one is told
	// from a client with an empty name by the column alone.
	var nulls int
	if err := rawDB(t, s.WorkspaceFile("ws")).QueryRow(`SELECT count(*) FROM audit_log WHERE client IS NULL`).Scan(&nulls); err != nil || nulls != 2 {
		t.Errorf("rows with client NULL: %d, %v; want 2 (bob's, pia's second proposal)", nulls, err)
	}
}

// TestMigrationAddsAuditClient: a workspace file made by the migrations
// before the audit log had a client opens with its rows intact (their
// client empty), and the next write records its client.
func TestMigrationAddsAuditClient(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadMigrations(schemaWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	const before = 7 // the last step without audit_log.client
	if len(ms) <= before {
		t.Fatalf("%d workspace migrations; the step adding the client is missing", len(ms))
	}
	// The file exists before the store first opens it, as in
	// TestMigrationToImportAuditKeepsRows.
	path := filepath.Join(dir, "ws.db")
	db, err := sql.Open("sqlite3", writerDSN(path, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{}
	for _, m := range ms[:before] {
		stmts = append(stmts, m.sql)
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", before),
		`INSERT INTO entries (project, slug, latest_version, title, updated_at) VALUES ('p', 'old', 1, 'old', 5)`,
		`INSERT INTO versions (id, project, slug, version, title, content, agent, created_at) VALUES (1, 'p', 'old', 1, 'old', 'x', 'old-agent', 5)`,
		`INSERT INTO audit_log (id, project, agent, action, slug, version, at) VALUES (41, 'p', 'old-agent', 'remember', 'old', 1, 5)`)
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%.60s: %v", stmt, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at, client) VALUES ('p', 'x', 'remember', 'y', 1, 6, 'Claude')`); err == nil {
		t.Fatal("the old schema took a client; the test would prove nothing")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dir)
	ref := ensure(t, s, "ws", "p")
	if path != s.WorkspaceFile("ws") {
		t.Fatalf("the workspace file is %s, not %s", s.WorkspaceFile("ws"), path)
	}
	if _, err := s.Append(context.Background(), ref, memory.Write{Slug: "old", Title: "old", Content: "y", Agent: "alice", Client: "Claude"}); err != nil {
		t.Fatalf("write after the migration: %v", err)
	}
	want := []string{"remember:old-agent:", "remember:alice:Claude"}
	if got := auditClients(t, s, ref); !slices.Equal(got, want) {
		t.Errorf("audit rows after the migration %q, want %q", got, want)
	}
	var v int
	if err := rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(ms) {
		t.Fatalf("user_version %d (%v), want %d", v, err, len(ms))
	}
}
