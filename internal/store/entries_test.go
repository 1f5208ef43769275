package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"munin/internal/memory"
)

func TestExpectedVersion(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	ctx := context.Background()
	cases := []struct {
		name     string
		expected *int
		code     memory.Code
		version  int
	}{
		{"must not exist, does not", intp(0), "", 1},
		{"must not exist, does", intp(0), memory.CodeConflict, 0},
		{"matches", intp(1), "", 2},
		{"stale", intp(1), memory.CodeConflict, 0},
		{"ahead", intp(7), memory.CodeConflict, 0},
		{"unset", nil, "", 3},
		{"negative", intp(-1), memory.CodeInvalid, 0},
	}
	for _, c := range cases {
		res, err := s.Append(ctx, ref, memory.Write{Slug: "doc", Content: c.name, ExpectedVersion: c.expected, Agent: "a"})
		if memory.ErrorCode(err) != c.code {
			t.Fatalf("%s: err %v, want code %q", c.name, err, c.code)
		}
		if c.code == "" && res.Version != c.version {
			t.Fatalf("%s: version %d, want %d", c.name, res.Version, c.version)
		}
	}
	_, err := s.Append(ctx, ref, memory.Write{Slug: "doc", ExpectedVersion: intp(1), Agent: "a"})
	if want := "conflict: doc is at version 3, expected 1"; err == nil || memory.PublicMessage(err) != want {
		t.Fatalf("conflict message = %v, want %q", err, want)
	}
}

func TestIdempotency(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	ctx := context.Background()
	w := memory.Write{Slug: "doc", Content: "once", Agent: "a", IdempotencyKey: "req-1"}
	first, err := s.Append(ctx, ref, w)
	if err != nil {
		t.Fatal(err)
	}
	// A retry, even one that would now conflict, returns the first result.
	w.ExpectedVersion = intp(0)
	again, err := s.Append(ctx, ref, w)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	want := first
	want.Replayed = true
	if again != want {
		t.Fatalf("retry = %+v, want first result %+v marked replayed", again, want)
	}
	if got, ok, err := s.Replay(ctx, ref, "doc", "req-1"); err != nil || !ok || got != want {
		t.Fatalf("Replay = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if _, ok, err := s.Replay(ctx, ref, "doc", "req-2"); err != nil || ok {
		t.Fatalf("Replay of an unused key: found %v, %v", ok, err)
	}
	if _, latest, _ := s.Get(ctx, ref, "doc", 0); latest != 1 {
		t.Fatalf("retry wrote again: latest %d", latest)
	}
	// The same key on another slug is another write.
	other, err := s.Append(ctx, ref, memory.Write{Slug: "other", Content: "x", Agent: "a", IdempotencyKey: "req-1"})
	if err != nil || other.Slug != "other" || other.Version != 1 {
		t.Fatalf("same key, other slug = %+v, %v", other, err)
	}
	// Without a key, each call writes.
	if r := put(t, s, ref, "doc", "again"); r.Version != 2 {
		t.Fatalf("keyless write version %d, want 2", r.Version)
	}
	// An expired key (older than 24 h) no longer short-circuits.
	ws, _ := s.workspace(ctx, "team", false)
	if _, err := ws.pool.writer.Exec(`UPDATE idempotency SET created_at = ? WHERE key = 'req-1' AND slug = 'doc'`,
		time.Now().Add(-25*time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	w.ExpectedVersion = nil
	if r, err := s.Append(ctx, ref, w); err != nil || r.Version != 3 {
		t.Fatalf("after expiry = %+v, %v; want a new version 3", r, err)
	}
}

func TestForgetTombstone(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	ctx := context.Background()
	put(t, s, ref, "doc", "hello", "x")
	res, err := s.Append(ctx, ref, memory.Write{Slug: "doc", Deleted: true, Content: "ignored", Agent: "b"})
	if err != nil || res.Version != 2 {
		t.Fatalf("forget = %+v, %v", res, err)
	}
	v, latest, err := s.Get(ctx, ref, "doc", 0)
	if err != nil || !v.Deleted || v.Content != "" || latest != 2 {
		t.Fatalf("latest after forget = %+v latest %d err %v, want an empty tombstone", v, latest, err)
	}
	// History is kept.
	if old, _, err := s.Get(ctx, ref, "doc", 1); err != nil || old.Content != "hello" {
		t.Fatalf("v1 after forget = %+v, %v", old, err)
	}
	if l, _, _ := s.List(ctx, ref, memory.ListQuery{}); len(l) != 0 {
		t.Fatalf("forgotten entry still listed: %+v", l)
	}
	n := 0
	_ = s.ScanLatest(ctx, ref, func(memory.Version) error { n++; return nil })
	if n != 0 {
		t.Fatalf("ScanLatest returned %d forgotten entries", n)
	}
	wantCode(t, func() error { _, err := s.Append(ctx, ref, memory.Write{Slug: "doc", Deleted: true}); return err }(), memory.CodeNotFound)
	wantCode(t, func() error { _, err := s.Append(ctx, ref, memory.Write{Slug: "nope", Deleted: true}); return err }(), memory.CodeNotFound)
	// Remembering again revives the slug at the next version.
	if r := put(t, s, ref, "doc", "back"); r.Version != 3 {
		t.Fatalf("revive version %d, want 3", r.Version)
	}
	audit, err := s.AuditRows(ctx, ref, memory.LogFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range audit {
		actions = append(actions, fmt.Sprintf("%s v%d %s", a.Action, a.Version, a.Agent))
	}
	if want := []string{"remember v3 tester", "forget v2 b", "remember v1 tester"}; !reflect.DeepEqual(actions, want) {
		t.Fatalf("audit = %v, want %v", actions, want)
	}
}

func TestGetAndHistory(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	ctx := context.Background()
	before := time.Now()
	for i := 1; i <= 3; i++ {
		put(t, s, ref, "doc", fmt.Sprintf("content %d ü", i), fmt.Sprintf("t%d", i))
	}
	if _, err := s.Append(ctx, ref, memory.Write{Slug: "bare", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	v, latest, err := s.Get(ctx, ref, "doc", 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != 2 || v.Content != "content 2 ü" || latest != 3 || !reflect.DeepEqual(v.Tags, []string{"t2"}) || v.Agent != "tester" {
		t.Fatalf("Get v2 = %+v latest %d", v, latest)
	}
	if v.CreatedAt.Location() != time.UTC || v.CreatedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("created_at = %v, want recent UTC", v.CreatedAt)
	}
	if b, _, _ := s.Get(ctx, ref, "bare", 0); b.Tags == nil {
		t.Fatal("nil tags returned as nil, want []string{}")
	}
	wantCode(t, func() error { _, _, err := s.Get(ctx, ref, "doc", 4); return err }(), memory.CodeNotFound)
	wantCode(t, func() error { _, _, err := s.Get(ctx, ref, "missing", 0); return err }(), memory.CodeNotFound)
	wantCode(t, func() error { _, _, err := s.Get(ctx, ref, "doc", -1); return err }(), memory.CodeInvalid)
	wantCode(t, func() error { _, _, err := s.Get(ctx, ref, "../etc", 0); return err }(), memory.CodeInvalid)
	if lv, err := s.Latest(ctx, ref, "doc"); err != nil || lv.Version != 3 {
		t.Fatalf("Latest = %+v, %v", lv, err)
	}

	h, err := s.History(ctx, ref, "doc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Version != 3 || h[2].Version != 1 {
		t.Fatalf("history = %+v, want v3..v1", h)
	}
	if h[0].Size != len("content 3 ü") {
		t.Fatalf("size = %d, want %d bytes", h[0].Size, len("content 3 ü"))
	}
	if h2, _ := s.History(ctx, ref, "doc", 2); len(h2) != 2 || h2[0].Version != 3 {
		t.Fatalf("history limit 2 = %+v", h2)
	}
	wantCode(t, func() error { _, err := s.History(ctx, ref, "missing", 0); return err }(), memory.CodeNotFound)
}

func TestListPaging(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	other := ensure(t, s, "team", "beta")
	ctx := context.Background()
	for i := range 7 {
		put(t, s, ref, fmt.Sprintf("notes/n%d", i), "x", "note", fmt.Sprintf("i%d", i%2))
	}
	put(t, s, ref, "decisions/db", "x", "decision")
	put(t, s, ref, "notesx", "x")
	put(t, s, other, "notes/foreign", "x", "note")

	var all []string
	cursor := ""
	pages := 0
	for {
		l, next, err := s.List(ctx, ref, memory.ListQuery{Prefix: "notes/", Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range l {
			all = append(all, e.Slug)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	want := []string{"notes/n0", "notes/n1", "notes/n2", "notes/n3", "notes/n4", "notes/n5", "notes/n6"}
	if !reflect.DeepEqual(all, want) || pages != 3 {
		t.Fatalf("paged prefix list = %v in %d pages, want %v in 3", all, pages, want)
	}

	l, _, err := s.List(ctx, ref, memory.ListQuery{Tag: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 3 || l[0].Slug != "notes/n1" || !reflect.DeepEqual(l[0].Tags, []string{"note", "i1"}) {
		t.Fatalf("tag list = %+v", l)
	}
	if l, _, _ := s.List(ctx, ref, memory.ListQuery{Tag: "i"}); len(l) != 0 {
		t.Fatalf("tag filter is not exact: %+v", l)
	}
	l, next, err := s.List(ctx, ref, memory.ListQuery{})
	if err != nil || len(l) != 9 || next != "" || l[0].Slug != "decisions/db" {
		t.Fatalf("full list = %+v next %q err %v", l, next, err)
	}
	if l[0].Version != 1 || l[0].Title != "t decisions/db" || l[0].UpdatedAt.IsZero() {
		t.Fatalf("summary = %+v", l[0])
	}
	wantCode(t, func() error { _, _, err := s.List(ctx, ref, memory.ListQuery{Cursor: "!!!"}); return err }(), memory.CodeInvalid)
	wantCode(t, func() error { _, _, err := s.List(ctx, ref, memory.ListQuery{Cursor: "Li4v"}); return err }(), memory.CodeInvalid)
}

func TestUnknownProject(t *testing.T) {
	s := openTest(t)
	ensure(t, s, "team", "alpha")
	ctx := context.Background()
	for _, ref := range []memory.ProjectRef{{Workspace: "team", Project: "nope"}, {Workspace: "ghost", Project: "alpha"}} {
		_, err := s.Append(ctx, ref, memory.Write{Slug: "x"})
		wantCode(t, err, memory.CodeNotFound)
		_, _, err = s.List(ctx, ref, memory.ListQuery{})
		wantCode(t, err, memory.CodeNotFound)
	}
	if p := s.WorkspaceFile("ghost"); fileExists(p) {
		t.Fatalf("a read of an unknown workspace created %s", p)
	}
}

// TestLatestManyLooksUpEntriesFirst pins the plan of the index's reread: one
// entries lookup per slug, then one version row each. A plain join's plan
// for ten or more slugs walked every version of every slug instead.
func TestLatestManyLooksUpEntriesFirst(t *testing.T) {
	_, ref, ws := openWorkspace(t)
	for _, n := range []int{1, 3, 10, 50, latestManyChunk} {
		args := []any{ref.Project}
		for i := range n {
			args = append(args, fmt.Sprintf("s%d", i))
		}
		plan := queryPlan(t, ws.pool.reader, latestManySQL(n), args...)
		want := []string{
			"SEARCH e USING PRIMARY KEY (project=? AND slug=?)",
			"SEARCH v USING INDEX sqlite_autoindex_versions_1 (project=? AND slug=? AND version=?)",
		}
		if !slices.Equal(plan, want) {
			t.Errorf("%d slugs: plan %q, want %q", n, plan, want)
		}
	}
}

// TestReadPlans pins the plans of the other hot reads, whose values are
// written +? (see stmtCacheSize): one index seek per row read, whatever the
// number of versions of a slug.
func TestReadPlans(t *testing.T) {
	_, _, ws := openWorkspace(t)
	const (
		entry   = "SEARCH e USING PRIMARY KEY (project=? AND slug=?)"
		version = "SEARCH v USING INDEX sqlite_autoindex_versions_1 (project=? AND slug=? AND version=?)"
		changed = "SEARCH versions USING COVERING INDEX versions_project_id (project=? AND id>?)"
		project = "SEARCH e USING PRIMARY KEY (project=?)"
	)
	for _, c := range []struct {
		name string
		q    string
		args []any
		want []string
	}{
		{"Get", getSQL, []any{"p", "s", 0}, []string{entry, version}},
		{"Get version", getSQL, []any{"p", "s", 3}, []string{entry, version}},
		{"Changes", changesSQL, []any{"p", 7}, []string{entry, "LIST SUBQUERY 1", changed, version}},
		{"ScanLatestSeq", scanLatestSQL, []any{"p"}, []string{project, version}},
	} {
		if plan := queryPlan(t, ws.pool.reader, c.q, c.args...); !slices.Equal(plan, c.want) {
			t.Errorf("%s: plan %q, want %q", c.name, plan, c.want)
		}
	}
}
