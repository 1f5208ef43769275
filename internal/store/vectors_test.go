package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
)

// vec builds a vector of a task's version for model.
func vec(t memory.VectorTask, model string, vals ...float32) memory.Vector {
	return memory.Vector{Project: t.Project, Slug: t.Slug, Version: t.Version, Model: model, Values: vals}
}

func missingSlugs(t *testing.T, s *Store, ws, model string) []string {
	t.Helper()
	ts, err := s.MissingVectors(context.Background(), ws, model, 100)
	if err != nil {
		t.Fatalf("MissingVectors: %v", err)
	}
	var out []string
	for _, x := range ts {
		out = append(out, x.Project.Project+":"+x.Slug)
	}
	slices.Sort(out)
	return out
}

func vectorSlugs(t *testing.T, s *Store, ref memory.ProjectRef, model string) map[string]memory.Vector {
	t.Helper()
	vs, err := s.Vectors(context.Background(), ref, model)
	if err != nil {
		t.Fatalf("Vectors: %v", err)
	}
	out := map[string]memory.Vector{}
	for _, v := range vs {
		out[v.Slug] = v
	}
	return out
}

// The vectors table is the queue: missing are the latest live versions of
// every project of the workspace; a stored vector takes its slug out, a new
// version or another model puts it back; forgotten entries are never
// missing and their vectors are never returned.
func TestVectorsLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a, b := ensure(t, s, "w", "a"), ensure(t, s, "w", "b")
	other := ensure(t, s, "x", "c")
	put(t, s, a, "one", "first text", "tag1")
	put(t, s, a, "two", "second text")
	put(t, s, b, "three", "third text")
	put(t, s, other, "four", "not in w")

	if got, want := missingSlugs(t, s, "w", "m1"), []string{"a:one", "a:two", "b:three"}; !slices.Equal(got, want) {
		t.Fatalf("missing = %v, want %v", got, want)
	}
	tasks, err := s.MissingVectors(ctx, "w", "m1", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tasks {
		if x.Slug == "one" && x.Text != "t one\ntag1\nfirst text" {
			t.Fatalf("text = %q", x.Text)
		}
	}
	var vs []memory.Vector
	for _, x := range tasks {
		vs = append(vs, vec(x, "m1", 1, 2, float32(x.Version)))
	}
	if err := s.PutVectors(ctx, "w", vs); err != nil {
		t.Fatalf("PutVectors: %v", err)
	}
	if got := missingSlugs(t, s, "w", "m1"); len(got) != 0 {
		t.Fatalf("missing after put = %v", got)
	}
	if n, _ := s.VectorBacklog(ctx, a, "m1"); n != 0 {
		t.Fatalf("backlog of a = %d, want 0", n)
	}
	got := vectorSlugs(t, s, a, "m1")
	if len(got) != 2 || !slices.Equal(got["one"].Values, []float32{1, 2, 1}) || got["one"].Version != 1 || got["one"].Project != a {
		t.Fatalf("vectors of a = %+v", got)
	}

	// A new version is missing again; its old vector is not returned.
	put(t, s, a, "one", "changed text")
	if got := missingSlugs(t, s, "w", "m1"); !slices.Equal(got, []string{"a:one"}) {
		t.Fatalf("missing after new version = %v", got)
	}
	if n, _ := s.VectorBacklog(ctx, a, "m1"); n != 1 {
		t.Fatalf("backlog of a = %d, want 1", n)
	}
	if n, _ := s.CountMissingVectors(ctx, "w", "m1"); n != 1 {
		t.Fatalf("workspace backlog = %d, want 1", n)
	}
	if _, ok := vectorSlugs(t, s, a, "m1")["one"]; ok {
		t.Fatal("Vectors returned the vector of an old version")
	}

	// A forgotten entry is neither missing nor returned.
	if _, err := s.Append(ctx, a, memory.Write{Slug: "two", Agent: "tester", Deleted: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := vectorSlugs(t, s, a, "m1")["two"]; ok {
		t.Fatal("Vectors returned a forgotten entry")
	}
	if got := missingSlugs(t, s, "w", "m1"); !slices.Equal(got, []string{"a:one"}) {
		t.Fatalf("missing after forget = %v", got)
	}

	// One project's missing vectors.
	if ts, err := s.MissingProjectVectors(ctx, b, "m2", 10); err != nil || len(ts) != 1 || ts[0].Slug != "three" || ts[0].Project != b {
		t.Fatalf("MissingProjectVectors = %+v, %v", ts, err)
	}

	// Of named slugs, only the live ones without a vector.
	if ts, err := s.PendingVectors(ctx, a, "m1", []string{"one", "two", "nope"}); err != nil || len(ts) != 1 || ts[0].Slug != "one" || ts[0].Version != 2 {
		t.Fatalf("PendingVectors = %+v, %v", ts, err)
	}

	// Another model: everything live is missing again.
	if got := missingSlugs(t, s, "w", "m2"); !slices.Equal(got, []string{"a:one", "b:three"}) {
		t.Fatalf("missing for m2 = %v", got)
	}
	if len(vectorSlugs(t, s, b, "m2")) != 0 {
		t.Fatal("vectors of m1 returned for m2")
	}
}

// Storing a vector drops the slug's vectors of older versions and other
// models: the file keeps at most one vector per slug.
func TestPutVectorsReplaces(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir)
	a := ensure(t, s, "w", "a")
	put(t, s, a, "one", "v1")
	must := func(v memory.Vector) {
		t.Helper()
		if err := s.PutVectors(ctx, "w", []memory.Vector{v}); err != nil {
			t.Fatal(err)
		}
	}
	must(memory.Vector{Project: a, Slug: "one", Version: 1, Model: "m1", Values: []float32{1}})
	put(t, s, a, "one", "v2")
	must(memory.Vector{Project: a, Slug: "one", Version: 2, Model: "m1", Values: []float32{2}})
	// A late vector of an older version never replaces a newer one's.
	must(memory.Vector{Project: a, Slug: "one", Version: 1, Model: "m1", Values: []float32{9}})
	if got := vectorSlugs(t, s, a, "m1")["one"]; got.Version != 2 || got.Values[0] != 2 {
		t.Fatalf("after a late old vector: %+v", got)
	}
	must(memory.Vector{Project: a, Slug: "one", Version: 2, Model: "m2", Values: []float32{3}})
	var n int
	if err := rawDB(t, filepath.Join(dir, "w.db")).QueryRow(`SELECT count(*) FROM vectors`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("vectors rows = %d, %v; want 1", n, err)
	}
}

// Bad vectors are refused with invalid and change nothing.
func TestPutVectorsInvalid(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := ensure(t, s, "w", "a")
	ensure(t, s, "x", "b")
	put(t, s, a, "one", "text")
	nan := float32(0)
	nan = nan / nan
	good := memory.Vector{Project: a, Slug: "one", Version: 1, Model: "m", Values: []float32{1}}
	for name, mod := range map[string]func(*memory.Vector){
		"other workspace": func(v *memory.Vector) { v.Project.Workspace = "x" },
		"no values":       func(v *memory.Vector) { v.Values = nil },
		"NaN":             func(v *memory.Vector) { v.Values = []float32{1, nan} },
		"no model":        func(v *memory.Vector) { v.Model = "" },
		"version 0":       func(v *memory.Vector) { v.Version = 0 },
		"bad slug":        func(v *memory.Vector) { v.Slug = "../x" },
	} {
		v := good
		mod(&v)
		err := s.PutVectors(ctx, "w", []memory.Vector{good, v})
		if memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("%s: err = %v, want invalid", name, err)
		}
	}
	if n, _ := s.VectorBacklog(ctx, a, "m"); n != 1 {
		t.Fatalf("a refused batch stored something: backlog %d", n)
	}
	if _, err := s.MissingVectors(ctx, "nope", "m", 1); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("unknown workspace: %v", err)
	}
}

// Vectors survive a restart bit for bit: nothing is recomputed.
func TestVectorsPersist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := ensure(t, s, "w", "a")
	put(t, s, a, "one", "text")
	want := []float32{0.25, -1.5, 3e-7}
	if err := s.PutVectors(ctx, "w", []memory.Vector{{Project: a, Slug: "one", Version: 1, Model: "m", Values: want}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, dir)
	if got := missingSlugs(t, s2, "w", "m"); len(got) != 0 {
		t.Fatalf("missing after restart = %v", got)
	}
	if got := vectorSlugs(t, s2, a, "m")["one"].Values; !slices.Equal(got, want) {
		t.Fatalf("values after restart = %v, want %v", got, want)
	}
}

// A long entry's text is cut to memory.MaxEmbedText runes.
func TestMissingVectorsTextBound(t *testing.T) {
	s := openTest(t)
	a := ensure(t, s, "w", "a")
	put(t, s, a, "long", strings.Repeat("ü", 3*memory.MaxEmbedText))
	ts, err := s.MissingVectors(context.Background(), "w", "m", 1)
	if err != nil || len(ts) != 1 {
		t.Fatalf("MissingVectors = %v, %v", ts, err)
	}
	if n := len([]rune(ts[0].Text)); n != memory.MaxEmbedText {
		t.Fatalf("text of %d runes, want %d", n, memory.MaxEmbedText)
	}
}

// A workspace file of the previous schema gains the vectors table on open.
func TestVectorsMigration(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	a := ensure(t, s, "w", "a")
	put(t, s, a, "one", "text")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", fileURI(filepath.Join(dir, "w.db")))
	if err != nil {
		t.Fatal(err)
	}
	// Back to schema 2: without vectors, and without what the later steps
	// add that cannot be added twice.
	if _, err := db.Exec(`DROP TABLE vectors; DROP TABLE supersessions; DROP TABLE project_settings; DROP TABLE proposals;
		ALTER TABLE versions DROP COLUMN valid_until; ALTER TABLE versions DROP COLUMN supersedes;
		ALTER TABLE entries DROP COLUMN valid_until; ALTER TABLE entries DROP COLUMN superseded_by;
		PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	s2 := openAt(t, dir)
	if got := missingSlugs(t, s2, "w", "m"); !slices.Equal(got, []string{"a:one"}) {
		t.Fatalf("missing after migration = %v", got)
	}
}
