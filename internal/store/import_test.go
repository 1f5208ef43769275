package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"munin/internal/memory"
)

// A workspace file from before migration 0002 keeps its audit rows (ids
// included) when the table is rebuilt, and afterwards takes import rows.
func TestMigrationToImportAuditKeepsRows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "team.db")
	ms, err := loadMigrations(schemaWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	old, err := sql.Open("sqlite3", writerDSN(path, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{ms[0].sql, "PRAGMA user_version = 1",
		`INSERT INTO audit_log (id, project, agent, action, slug, version, at) VALUES (41, 'alpha', 'old-agent', 'remember', 'a', 1, 5)`} {
		if _, err := old.Exec(stmt); err != nil {
			t.Fatalf("set up a version-1 file: %v", err)
		}
	}
	if _, err := old.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at) VALUES ('alpha', 'x', 'import', 'a', 2, 6)`); err == nil {
		t.Fatal("the version-1 schema took an import row; the test would prove nothing")
	}
	old.Close()

	s := openAt(t, dir)
	ref := ensure(t, s, "team", "alpha")
	var agent string
	if err := rawDB(t, path).QueryRow(`SELECT agent FROM audit_log WHERE id = 41 AND action = 'remember'`).Scan(&agent); err != nil || agent != "old-agent" {
		t.Fatalf("audit row 41 after the migration: %q, %v", agent, err)
	}
	v := memory.Version{Slug: "b", Version: 1, Content: "imported", Tags: []string{}, Agent: "a", CreatedAt: time.Now()}
	if res, err := s.ImportVersions(context.Background(), ref, []memory.Version{v}, memory.DefaultMaxContent); err != nil || res.Imported != 1 {
		t.Fatalf("import after the migration: %+v, %v", res, err)
	}
	// Neither the old row's time (long ago) nor the import row counts now.
	if n, err := s.CountWritesSince(context.Background(), ref, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("writes counted against the budget: %d, %v", n, err)
	}
}
