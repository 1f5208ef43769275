package replica

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// requireBinary returns the litestream binary or skips the test with how to
// install it; with MUNIN_REQUIRE_LITESTREAM=1 (CI) a missing binary fails.
func requireBinary(t testing.TB) string {
	t.Helper()
	b, err := Binary()
	if err != nil {
		if os.Getenv("MUNIN_REQUIRE_LITESTREAM") == "1" {
			t.Fatalf("MUNIN_REQUIRE_LITESTREAM=1 but: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
	return b
}

// testLogger sends the sidecar's output to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startSidecar starts a sidecar that the test stops.
func startSidecar(t testing.TB, opts Options) *Sidecar {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = requireBinary(t)
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start sidecar: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop sidecar: %v", err)
		}
	})
	return s
}

// ctxT is a bounded context for one test step.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writer is a workspace-like SQLite file written the way Munin's writer
// does in cluster mode: WAL, synchronous FULL, one connection, no automatic
// checkpoints (Litestream does them).
type writer struct {
	path string
	db   *sql.DB
	next int // id of the next row
}

func openWriter(t testing.TB, path string) *writer {
	t.Helper()
	dsn := "file:" + path + "?_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	for _, q := range []string{
		"PRAGMA wal_autocheckpoint=0",
		"CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return &writer{path: path, db: db, next: 1}
}

// batch commits n rows in one transaction, each body size bytes long.
func (w *writer) batch(t testing.TB, n, size int) {
	t.Helper()
	if err := w.tryBatch(n, size); err != nil {
		t.Fatal(err)
	}
}

// tryBatch is batch for goroutines other than the test's.
func (w *writer) tryBatch(n, size int) error {
	tx, err := w.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := 0; i < n; i++ {
		if _, err := tx.Exec("INSERT INTO rows (id, body) VALUES (?, ?)", w.next, body(w.next, size)); err != nil {
			return err
		}
		w.next++
	}
	return tx.Commit()
}

func body(id, size int) string {
	s := fmt.Sprintf("row %d ", id)
	return s + strings.Repeat("x", max(size-len(s), 0))
}

// checkRows opens a restored file and requires PRAGMA integrity_check = ok
// and exactly rows 1..want with their bodies.
func checkRows(t testing.TB, path string, want, size int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("%s: integrity_check = %q, %v", filepath.Base(path), ok, err)
	}
	rows, err := db.Query("SELECT id, body FROM rows ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int
		var b string
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		n++
		if id != n || b != body(id, size) {
			t.Fatalf("%s: row %d is (%d, %.20q…)", filepath.Base(path), n, id, b)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("%s holds %d rows, want %d", filepath.Base(path), n, want)
	}
}

// fileURL is a file replica location in a fresh temporary directory.
func fileURL(t testing.TB) string {
	return "file://" + t.TempDir()
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
