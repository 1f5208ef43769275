package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"munin/internal/memory"
)

// countCompiles makes db one connection whose authorizer counts what SQLite
// compiles on it, into n: every prepare and every re-prepare of a statement
// asks the authorizer, a run of a cached statement does not. BEGIN, COMMIT
// and ROLLBACK are left out: go-sqlite3 runs them uncached, one parse each,
// whatever the statements between them do.
func countCompiles(t *testing.T, db *sql.DB, n *atomic.Int64) {
	t.Helper()
	db.SetMaxOpenConns(1) // no-op for the writer, which has one already
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		dc.(*sqlite3.SQLiteConn).RegisterAuthorizer(func(op int, _, _, _ string) int {
			if op != sqlite3.SQLITE_TRANSACTION {
				n.Add(1)
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestStatementsArePreparedOnce runs every statement of the store again with
// other values and checks that SQLite compiled none of them again. A
// statement whose plan looked at a bound value (a join or an ORDER BY with
// "column = ?", a "LIMIT ?") is re-prepared on every run — go-sqlite3 clears
// the bindings before each run, which expires such a statement whatever the
// new values — and that costs 20-40 µs of parsing and planning per run,
// several times the rows' own cost.
//
// Without the latest-version cache every read statement runs; with it the
// writer's statements (its changed-slugs query among them) are counted, the
// readers' not: a cache hit runs no statement, so a case's first prepare can
// fall into the counted runs.
func TestStatementsArePreparedOnce(t *testing.T) {
	t.Run("cache off", func(t *testing.T) {
		s := openAtWith(t, t.TempDir(), Options{})
		ref := ensure(t, s, "ws", "p")
		ws, err := s.requireProject(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		checkPreparedOnce(t, s, ref, ws.pool.reader, ws.pool.writer, s.control.reader, s.control.writer)
	})
	t.Run("cache on", func(t *testing.T) {
		s, ref, ws := openWorkspace(t)
		checkPreparedOnce(t, s, ref, ws.pool.writer, s.control.writer)
	})
}

func checkPreparedOnce(t *testing.T, s *Store, ref memory.ProjectRef, dbs ...*sql.DB) {
	var compiled atomic.Int64
	for _, db := range dbs {
		countCompiles(t, db, &compiled)
	}
	for _, c := range statementCases(t, s, ref) {
		for i := range 2 { // the first runs prepare, on each path
			if err := c.run(i); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		before := compiled.Load()
		for i := 2; i < 12; i++ {
			if err := c.run(i); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if n := compiled.Load() - before; n != 0 {
			t.Errorf("%s: SQLite compiled again in 10 more runs (%d authorizer calls)", c.name, n)
		}
	}
}

// stmtCase runs statements of the store with values that differ with i.
type stmtCase struct {
	name string
	run  func(i int) error
}

// statementCases fills project ref of s and returns cases that run every
// statement of the store, each with values depending on i.
func statementCases(t *testing.T, s *Store, ref memory.ProjectRef) []stmtCase {
	t.Helper()
	ctx := context.Background()
	slug := func(i int) string { return fmt.Sprintf("notes/s%02d", i) }
	for i := range 40 {
		put(t, s, ref, slug(i), "first", "a", "b")
		put(t, s, ref, slug(i), "second", "a")
	}
	hour := time.Now().Add(-time.Hour)
	old := time.Now().Add(-48 * time.Hour)
	for i := range 31 {
		if err := s.AppendSearchLog(ctx, []memory.SearchLogRow{{Project: ref, Agent: "a", Query: fmt.Sprint("q", i), At: old.Add(-time.Hour)}}); err != nil {
			t.Fatal(err)
		}
	}
	_, key, err := s.CreateKey(ctx, ref, "agent", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	mark, err := s.ScanLatestSeq(ctx, ref, func(memory.Version) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, ref, slug(0), "third")
	vec := func(i int) []memory.Vector {
		return []memory.Vector{{Project: ref, Slug: slug(i), Model: "m", Version: 2, Values: []float32{float32(i)}}}
	}
	nop := func(memory.Version) error { return nil }

	return []stmtCase{
		{"Get latest", func(i int) error { _, _, err := s.Get(ctx, ref, slug(i), 0); return err }},
		{"Get version", func(i int) error { _, _, err := s.Get(ctx, ref, slug(i), 1+i%2); return err }},
		{"Get missing version", func(i int) error { _, _, err := s.Get(ctx, ref, slug(i), 5+i); return okIf(err, memory.CodeNotFound) }},
		{"Get missing slug", func(i int) error { _, _, err := s.Get(ctx, ref, slug(100+i), 0); return okIf(err, memory.CodeNotFound) }},
		{"LatestMany", func(i int) error { _, err := s.LatestMany(ctx, ref, []string{slug(i), slug(i + 1)}); return err }},
		{"History", func(i int) error { _, err := s.History(ctx, ref, slug(i), i%3); return err }},
		{"Replay", func(i int) error { _, _, err := s.Replay(ctx, ref, slug(i), fmt.Sprint("k", i)); return err }},
		{"ScanLatestSeq", func(i int) error { _, err := s.ScanLatestSeq(ctx, ref, nop); return err }},
		{"Changes", func(i int) error { _, err := s.Changes(ctx, ref, mark, nop); return err }},
		{"Changes from the start", func(i int) error { _, err := s.Changes(ctx, ref, memory.Mark{}, nop); return err }},
		{"ScanVersions", func(i int) error { return s.ScanVersions(ctx, ref, nop) }},
		{"CountWritesSince", func(i int) error { _, err := s.CountWritesSince(ctx, ref, hour.Add(time.Duration(i))); return err }},
		{"WrittenSince", func(i int) error { _, _, err := s.WrittenSince(ctx, ref, hour.Add(time.Duration(i))); return err }},
		{"EntryStats", func(i int) error { _, _, err := s.EntryStats(ctx, ref); return err }},
		{"List", func(i int) error { _, _, err := s.List(ctx, ref, memory.ListQuery{Limit: 1 + i}); return err }},
		{"List prefix and tag", func(i int) error {
			_, _, err := s.List(ctx, ref, memory.ListQuery{Prefix: slug(i)[:8], Tag: "a", Limit: 1 + i})
			return err
		}},
		{"ListEntries", func(i int) error {
			_, _, err := s.ListEntries(ctx, ref, memory.EntryFilter{Order: memory.OrderUpdated, Offset: i, Limit: 1 + i})
			return err
		}},
		{"ListEntries by tag", func(i int) error {
			_, _, err := s.ListEntries(ctx, ref, memory.EntryFilter{Tag: "a", Order: memory.OrderTitle, Offset: i, Limit: 1 + i})
			return err
		}},
		{"AuditRows", func(i int) error {
			_, err := s.AuditRows(ctx, ref, memory.LogFilter{Agent: "tester", Slug: slug(i), Since: hour, Limit: 1 + i})
			return err
		}},
		{"AuditRows by prefix", func(i int) error {
			_, err := s.AuditRows(ctx, ref, memory.LogFilter{Slug: "notes/", BeforeID: int64(100 - i), Limit: 1 + i})
			return err
		}},
		{"SearchRows", func(i int) error {
			_, err := s.SearchRows(ctx, ref, memory.LogFilter{MissesOnly: true, Limit: 1 + i})
			return err
		}},
		{"MissedQueries", func(i int) error { _, err := s.MissedQueries(ctx, ref, old.Add(-time.Duration(i)), 1+i); return err }},
		{"MissingVectors", func(i int) error { _, err := s.MissingVectors(ctx, "ws", "m", 1+i); return err }},
		{"MissingProjectVectors", func(i int) error { _, err := s.MissingProjectVectors(ctx, ref, "m", 1+i); return err }},
		{"PendingVectors", func(i int) error { _, err := s.PendingVectors(ctx, ref, "m", []string{slug(i)}); return err }},
		{"CountMissingVectors", func(i int) error { _, err := s.CountMissingVectors(ctx, "ws", "m"); return err }},
		{"VectorBacklog", func(i int) error { _, err := s.VectorBacklog(ctx, ref, "m"); return err }},
		{"PutVectors", func(i int) error { return s.PutVectors(ctx, "ws", vec(i)) }},
		{"Vectors", func(i int) error { _, err := s.Vectors(ctx, ref, "m"); return err }},
		{"Append", func(i int) error {
			_, err := s.Append(ctx, ref, memory.Write{Slug: slug(i), Content: "x", Tags: []string{"t"}, Agent: "a"})
			return err
		}},
		{"Append with idempotency key", func(i int) error {
			_, err := s.Append(ctx, ref, memory.Write{Slug: slug(i), Content: "y", Agent: "a", IdempotencyKey: fmt.Sprint("k", i)})
			return err
		}},
		{"Forget", func(i int) error {
			_, err := s.Append(ctx, ref, memory.Write{Slug: slug(i), Deleted: true, Agent: "a"})
			return err
		}},
		{"ImportVersions", func(i int) error {
			v := memory.Version{Slug: slug(200 + i), Version: 1, Content: "imported", Agent: "a", CreatedAt: old}
			_, err := s.ImportVersions(ctx, ref, []memory.Version{v, v}, memory.DefaultMaxContent)
			return err
		}},
		{"AppendSearchLog", func(i int) error {
			return s.AppendSearchLog(ctx, []memory.SearchLogRow{{Project: ref, Agent: "a", Query: "q", Hits: i}})
		}},
		{"PruneSearchLog by age", func(i int) error {
			at := old.Add(time.Duration(i) * time.Minute)
			if err := s.AppendSearchLog(ctx, []memory.SearchLogRow{{Project: ref, Agent: "a", Query: "old", At: at}}); err != nil {
				return err
			}
			n, err := s.PruneSearchLog(ctx, ref, at.Add(time.Second), 0)
			return deletedSome(n, err)
		}},
		{"PruneSearchLog by count", func(i int) error {
			row := memory.SearchLogRow{Project: ref, Agent: "a", Query: "new"}
			if err := s.AppendSearchLog(ctx, []memory.SearchLogRow{row, row}); err != nil {
				return err
			}
			n, err := s.PruneSearchLog(ctx, ref, time.Time{}, 10+i)
			return deletedSome(n, err)
		}},
		{"Project", func(i int) error { _, err := s.Project(ctx, ref); return err }},
		{"SetWriteBudget", func(i int) error { return s.SetWriteBudget(ctx, ref, 100+i) }},
		{"KeyByID", func(i int) error { _, err := s.KeyByID(ctx, key.ID+int64(i%2)); return okIf(err, memory.CodeNotFound) }},
		{"ListProjectKeys", func(i int) error { _, err := s.ListProjectKeys(ctx, ref); return err }},
		{"KeyCounts", func(i int) error { _, err := s.KeyCounts(ctx, ref, hour.Add(time.Duration(i))); return err }},
	}
}

// okIf turns an error of code into nil.
func okIf(err error, code memory.Code) error {
	if memory.ErrorCode(err) == code {
		return nil
	}
	return err
}

// deletedSome checks that a prune deleted rows, so that its deletes ran.
func deletedSome(n int, err error) error {
	if err == nil && n == 0 {
		err = fmt.Errorf("deleted nothing")
	}
	return err
}
