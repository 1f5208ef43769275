package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// slugsOf lists the slugs of a list page with their supersession.
func slugsOf(es []memory.EntrySummary) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Slug
		if e.SupersededBy != "" {
			out[i] += ">" + e.SupersededBy
		}
	}
	return out
}

func TestAsOfReadsTheMemoryAsItWas(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	a1 := put(t, s, ref, "a", "first").CreatedAt
	a2 := put(t, s, ref, "a", "second").CreatedAt
	n, err := supersedeWrite(s, ref, "n", "a")
	if err != nil {
		t.Fatal(err)
	}
	a3 := put(t, s, ref, "a", "third").CreatedAt
	forgot, err := s.Append(ctx, ref, memory.Write{Slug: "a", Deleted: true, Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name       string
		version    int
		at         time.Time
		want, last int
		by         string
		deleted    bool
	}{
		{"at the first version", 0, a1, 1, 1, "", false},
		{"between two versions", 0, a2.Add(-time.Nanosecond), 1, 1, "", false},
		{"at the second", 0, a2, 2, 2, "", false},
		{"superseded then", 0, n.CreatedAt, 2, 2, "n", false},
		{"an older version then", 1, n.CreatedAt, 1, 2, "", false},
		{"written again: live", 0, a3, 3, 3, "", false},
		{"forgotten then", 0, forgot.CreatedAt, 4, 4, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, latest, err := s.GetAsOf(ctx, ref, "a", c.version, c.at)
			if err != nil {
				t.Fatal(err)
			}
			if v.Version != c.want || latest != c.last || v.SupersededBy != c.by || v.Deleted != c.deleted {
				t.Fatalf("got v%d latest %d superseded_by %q deleted %v, want v%d latest %d %q %v",
					v.Version, latest, v.SupersededBy, v.Deleted, c.want, c.last, c.by, c.deleted)
			}
		})
	}
	_, _, err = s.GetAsOf(ctx, ref, "a", 0, a1.Add(-time.Nanosecond))
	wantCode(t, err, memory.CodeNotFound)
	_, _, err = s.GetAsOf(ctx, ref, "a", 2, a1)
	wantCode(t, err, memory.CodeNotFound)

	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{a1.Add(-time.Nanosecond), ""},
		{a1, "a"},
		{n.CreatedAt, "a>n n"},
		{a3, "a n"},
		{forgot.CreatedAt, "n"},
	} {
		es, _, err := s.ListAsOf(ctx, ref, memory.ListQuery{}, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(slugsOf(es), " "); got != c.want {
			t.Fatalf("list as of %s: %q, want %q", c.at, got, c.want)
		}
	}

	hist, err := s.HistoryAsOf(ctx, ref, "a", 0, a2)
	if err != nil || len(hist) != 2 || hist[0].Version != 2 {
		t.Fatalf("history as of the second version: %+v, %v", hist, err)
	}
	_, err = s.HistoryAsOf(ctx, ref, "a", 0, a1.Add(-time.Nanosecond))
	wantCode(t, err, memory.CodeNotFound)
}

func TestListAsOfPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	s, ref, _ := openWorkspace(t)
	put(t, s, ref, "p/1", "x", "keep")
	put(t, s, ref, "p/2", "x")
	put(t, s, ref, "p/3", "x", "keep")
	put(t, s, ref, "q/1", "x", "keep")
	at := put(t, s, ref, "q/2", "x").CreatedAt
	put(t, s, ref, "p/4", "x", "keep") // after at
	es, next, err := s.ListAsOf(ctx, ref, memory.ListQuery{Prefix: "p/", Tag: "keep", Limit: 1}, at)
	if err != nil || strings.Join(slugsOf(es), " ") != "p/1" || next == "" {
		t.Fatalf("first page: %v %q %v", slugsOf(es), next, err)
	}
	es, next, err = s.ListAsOf(ctx, ref, memory.ListQuery{Prefix: "p/", Tag: "keep", Limit: 1, Cursor: next}, at)
	if err != nil || strings.Join(slugsOf(es), " ") != "p/3" {
		t.Fatalf("second page: %v %q %v", slugsOf(es), next, err)
	}
	if next != "" {
		if es, _, _ = s.ListAsOf(ctx, ref, memory.ListQuery{Prefix: "p/", Tag: "keep", Limit: 1, Cursor: next}, at); len(es) != 0 {
			t.Fatalf("third page: %v (p/4 came after as_of)", slugsOf(es))
		}
	}
}

// TestAsOfStatementsArePreparedOnce is TestStatementsArePreparedOnce for the
// as-of reads and a write that supersedes: none is compiled again when run
// with other values.
func TestAsOfStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	s, ref, ws := openWorkspace(t)
	slug := func(i int) string { return fmt.Sprintf("notes/s%02d", i) }
	start := time.Now()
	for i := range 40 {
		put(t, s, ref, slug(i), "first", "a", "b")
		put(t, s, ref, slug(i), "second", "a")
	}
	if _, err := supersedeWrite(s, ref, "by/0", slug(0)); err != nil {
		t.Fatal(err)
	}
	var compiled atomic.Int64
	for _, db := range []*sql.DB{ws.pool.reader, ws.pool.writer} {
		countCompiles(t, db, &compiled)
	}
	at := func(i int) time.Time { return time.Now().Add(-time.Duration(i) * time.Microsecond) }
	for _, c := range []stmtCase{
		{"GetAsOf", func(i int) error { _, _, err := s.GetAsOf(ctx, ref, slug(i), 0, at(i)); return err }},
		{"GetAsOf version", func(i int) error { _, _, err := s.GetAsOf(ctx, ref, slug(i), 1, at(i)); return err }},
		{"GetAsOf before", func(i int) error {
			_, _, err := s.GetAsOf(ctx, ref, slug(i), 0, start.Add(-time.Duration(i)))
			return okIf(err, memory.CodeNotFound)
		}},
		{"ListAsOf", func(i int) error {
			_, _, err := s.ListAsOf(ctx, ref, memory.ListQuery{Limit: 1 + i}, at(i))
			return err
		}},
		{"ListAsOf prefix and tag", func(i int) error {
			_, _, err := s.ListAsOf(ctx, ref, memory.ListQuery{Prefix: slug(i)[:8], Tag: "a", Limit: 1 + i}, at(i))
			return err
		}},
		{"HistoryAsOf", func(i int) error { _, err := s.HistoryAsOf(ctx, ref, slug(i), 1+i%3, at(i)); return err }},
		{"Append superseding", func(i int) error { _, err := supersedeWrite(s, ref, fmt.Sprint("by/", i+1), slug(i+1)); return err }},
	} {
		if n, err := compilesAfterFirst(&compiled, c.run); err != nil || n != 0 {
			t.Errorf("%s: %v; SQLite compiled again in 10 more runs (%d authorizer calls)", c.name, err, n)
		}
	}
}

// compilesAfterFirst runs run with i = 0, 1 (the first runs prepare, on
// each path), then ten times more, and returns what the ten compiled.
func compilesAfterFirst(compiled *atomic.Int64, run func(i int) error) (int64, error) {
	var before int64
	for i := range 12 {
		if i == 2 {
			before = compiled.Load()
		}
		if err := run(i); err != nil {
			return 0, err
		}
	}
	return compiled.Load() - before, nil
}
