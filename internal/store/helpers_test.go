package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// The service's Store contract is implemented exactly.
var _ service.Store = (*Store)(nil)

// openTest opens a store in a fresh temp dir and closes it at the end.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openAt(t, t.TempDir())
}

// testLatestCacheBytes turns the latest-version cache on in every store the
// tests open with openAt, so that every store test also checks that the
// cache answers what SQLite would.
const testLatestCacheBytes = 4 << 20

func openAt(t testing.TB, dir string) *Store {
	t.Helper()
	return openAtWith(t, dir, Options{LatestCacheBytes: testLatestCacheBytes})
}

// openAtWith opens a store in dir with opts and closes it at the end.
func openAtWith(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ensure creates a project and fails the test on error.
func ensure(t testing.TB, s *Store, ws, project string) memory.ProjectRef {
	t.Helper()
	ref := memory.ProjectRef{Workspace: ws, Project: project}
	if _, err := s.EnsureProject(context.Background(), ref); err != nil {
		t.Fatalf("EnsureProject %s: %v", ref, err)
	}
	return ref
}

// openWorkspace is a new store with project ws/p and the handle of its
// workspace, for tests that look at its connections.
func openWorkspace(t testing.TB) (*Store, memory.ProjectRef, *workspace) {
	t.Helper()
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	ws, err := s.requireProject(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return s, ref, ws
}

// put appends a simple version and fails the test on error.
func put(t testing.TB, s *Store, ref memory.ProjectRef, slug, content string, tags ...string) memory.WriteResult {
	t.Helper()
	res, err := s.Append(context.Background(), ref, memory.Write{Slug: slug, Title: "t " + slug, Content: content, Tags: tags, Agent: "tester"})
	if err != nil {
		t.Fatalf("Append %s: %v", slug, err)
	}
	return res
}

func intp(i int) *int { return &i }

// wantCode fails unless err carries code.
func wantCode(t testing.TB, err error, code memory.Code) {
	t.Helper()
	if got := memory.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (err %v), want %q", got, err, code)
	}
}

// rawDB opens a file directly, bypassing the store, to inspect what is on disk.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", fileURI(path)+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// gate blocks the workspace writer inside its next batch (after the writes
// were applied, before COMMIT) until open is called. Only batches started
// after arm() are held, and only once.
type gate struct {
	armed   chan struct{}
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// installGate puts a gate before every COMMIT of s. The test's cleanup opens
// it: a failing assertion while the writer is held ends the test at once,
// instead of the store's Close waiting for the held writer until the test
// binary's timeout. Cleanups run last-in first-out, so it opens before the
// Close registered by openTest.
func installGate(t testing.TB, s *Store) *gate {
	g := &gate{armed: make(chan struct{}, 1), entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	s.hookBeforeCommit = func() {
		select {
		case <-g.armed:
			close(g.entered)
			<-g.release
		default:
		}
	}
	return g
}

func (g *gate) arm() { g.armed <- struct{}{} }

// open lets the held writer go on; calling it again does nothing.
func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// waitEntered waits until the writer sits in the gate.
func (g *gate) waitEntered(t testing.TB) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("writer never reached the gate")
	}
}

// waitQueued waits until n writes wait in the workspace's queue.
func waitQueued(t testing.TB, s *Store, ws string, n int) {
	t.Helper()
	s.mu.Lock()
	w := s.workspaces[ws]
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for len(w.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s has %d writes, want %d", ws, len(w.queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// isLocked reports SQLite's busy errors, which invariant 1
// (docs/architecture.md#invariant-1-one-writer-per-workspace) forbids.
func isLocked(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "SQLITE_BUSY"))
}

// queryPlan returns the details of EXPLAIN QUERY PLAN for q, in order.
func queryPlan(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
