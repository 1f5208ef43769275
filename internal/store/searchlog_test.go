package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"munin/internal/memory"
)

// logRows makes n search-log rows of ref, the i-th at at(i), query q-i.
func logRows(ref memory.ProjectRef, prefix string, n int, at func(i int) time.Time) []memory.SearchLogRow {
	rows := make([]memory.SearchLogRow, n)
	for i := range rows {
		rows[i] = memory.SearchLogRow{Project: ref, Agent: "a", Query: fmt.Sprintf("%s-%d", prefix, i), At: at(i)}
	}
	return rows
}

// logStats counts a project's search-log rows and returns the oldest and
// newest query among them, by time.
func logStats(t *testing.T, s *Store, ref memory.ProjectRef) (n int, oldest, newest string) {
	t.Helper()
	db := rawDB(t, s.WorkspaceFile(ref.Workspace))
	if err := db.QueryRow(`SELECT count(*) FROM search_log WHERE project = ?`, ref.Project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return 0, "", ""
	}
	q := `SELECT query FROM search_log WHERE project = ? ORDER BY at %s, id %s LIMIT 1`
	if err := db.QueryRow(fmt.Sprintf(q, "ASC", "ASC"), ref.Project).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(fmt.Sprintf(q, "DESC", "DESC"), ref.Project).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	return n, oldest, newest
}

// TestPruneSearchLog: rows older than the cut-off and beyond the newest keep
// are deleted, in several chunks; the newest keep stay; other projects, in
// the same workspace file and in another, keep every row.
func TestPruneSearchLog(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, b, c := ensure(t, s, "w", "a"), ensure(t, s, "w", "b"), ensure(t, s, "x", "c")
	now := time.Now()
	old := func(i int) time.Time { return now.Add(-40*24*time.Hour + time.Duration(i)*time.Millisecond) }
	recent := func(i int) time.Time { return now.Add(-time.Hour + time.Duration(i)*time.Millisecond) }
	const nOld, nRecent, keep = 20, 2*pruneChunk + 500, 1000
	for _, ref := range []memory.ProjectRef{a, b, c} {
		rows := append(logRows(ref, "old", nOld, old), logRows(ref, "recent", nRecent, recent)...)
		if err := s.AppendSearchLog(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := now.Add(-30 * 24 * time.Hour)

	deleted, err := s.PruneSearchLog(ctx, a, cutoff, keep)
	if err != nil {
		t.Fatal(err)
	}
	if want := nOld + nRecent - keep; deleted != want {
		t.Errorf("deleted %d rows of %s, want %d", deleted, a, want)
	}
	n, oldest, newest := logStats(t, s, a)
	if n != keep || oldest != fmt.Sprintf("recent-%d", nRecent-keep) || newest != fmt.Sprintf("recent-%d", nRecent-1) {
		t.Errorf("%s keeps %d rows from %s to %s, want the %d newest: recent-%d to recent-%d", a, n, oldest, newest, keep, nRecent-keep, nRecent-1)
	}

	// By age only: the recent rows all stay.
	if deleted, err = s.PruneSearchLog(ctx, b, cutoff, 0); err != nil || deleted != nOld {
		t.Errorf("prune %s by age: deleted %d (err %v), want %d", b, deleted, err, nOld)
	}
	if n, oldest, _ := logStats(t, s, b); n != nRecent || oldest != "recent-0" {
		t.Errorf("%s keeps %d rows from %s, want %d from recent-0", b, n, oldest, nRecent)
	}
	// Nothing to do: nothing deleted, no error.
	if deleted, err = s.PruneSearchLog(ctx, a, cutoff, keep); err != nil || deleted != 0 {
		t.Errorf("second prune of %s: deleted %d (err %v), want 0", a, deleted, err)
	}
	if n, _, _ := logStats(t, s, c); n != nOld+nRecent {
		t.Errorf("%s (not pruned) has %d rows, want %d", c, n, nOld+nRecent)
	}
	_, err = s.PruneSearchLog(ctx, memory.ProjectRef{Workspace: "x", Project: "nope"}, cutoff, keep)
	wantCode(t, err, memory.CodeNotFound)
}

// TestPruneSearchLogTies: rows with the same time are ordered by id, so
// exactly keep rows stay.
func TestPruneSearchLogTies(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a := ensure(t, s, "w", "a")
	same := time.Now()
	if err := s.AppendSearchLog(ctx, logRows(a, "q", 10, func(int) time.Time { return same })); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PruneSearchLog(ctx, a, time.Time{}, 3); err != nil {
		t.Fatal(err)
	}
	if n, oldest, newest := logStats(t, s, a); n != 3 || oldest != "q-7" || newest != "q-9" {
		t.Errorf("keeps %d rows from %s to %s, want 3: q-7 to q-9", n, oldest, newest)
	}
}
