package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// importBase is the time of the versions these tests import: an hour ago,
// to the second, so that every version has a time of its own before now.
var importBase = time.Now().Add(-time.Hour).Truncate(time.Second)

// live is version n of slug, as an export carries it.
func live(slug string, n int) memory.Version {
	return memory.Version{Slug: slug, Version: n, Title: fmt.Sprintf("%s v%d", slug, n),
		Content: fmt.Sprintf("content of %s v%d", slug, n), Tags: []string{"imported"}, Agent: "exporter",
		CreatedAt: importBase.Add(time.Duration(n) * time.Minute)}
}

// tomb is a tombstone (a forget) at version n of slug.
func tomb(slug string, n int) memory.Version {
	v := live(slug, n)
	v.Content, v.Deleted = "", true
	return v
}

// with returns v changed by f (a case's one deviation from a valid version).
func with(v memory.Version, f func(*memory.Version)) memory.Version {
	f(&v)
	return v
}

// importCase is one batch against what an earlier import stored. code ""
// means the batch is applied with imported and skipped as counted; else it
// is refused as a whole, naming version index with a message containing
// mention.
type importCase struct {
	name              string
	stored, batch     []memory.Version
	code              memory.Code
	index             int
	mention           string
	imported, skipped int
}

// Each rule of ImportVersions on the store itself, not only through the
// portable package: versions follow the slug's latest one without gaps and
// in order (within a batch and across what is stored), a tombstone is never
// the first version nor follows a tombstone, a version already stored is
// skipped when identical and a conflict naming the field when not, and a
// refused batch changes nothing, the versions before the refused one
// included.
func TestImportRules(t *testing.T) {
	cases := []importCase{
		{name: "first versions in order", batch: []memory.Version{live("a", 1), live("a", 2), live("b", 1)}, imported: 3},
		{name: "continues after the stored latest", stored: []memory.Version{live("a", 1), live("a", 2)},
			batch: []memory.Version{live("a", 3)}, imported: 1},
		{name: "forget then remember again", batch: []memory.Version{live("a", 1), tomb("a", 2), live("a", 3)}, imported: 3},
		{name: "remember after a stored tombstone", stored: []memory.Version{live("a", 1), tomb("a", 2)},
			batch: []memory.Version{live("a", 3)}, imported: 1},
		{name: "gap in the batch", batch: []memory.Version{live("a", 1), live("a", 3)},
			code: memory.CodeInvalid, index: 1, mention: "a v3 does not follow the latest version 1"},
		{name: "gap after the stored latest", stored: []memory.Version{live("a", 1)}, batch: []memory.Version{live("a", 3)},
			code: memory.CodeInvalid, index: 0, mention: "a v3 does not follow the latest version 1"},
		{name: "first version missing", batch: []memory.Version{live("a", 2)},
			code: memory.CodeInvalid, index: 0, mention: "a v2 does not follow the latest version 0"},
		{name: "out of order", batch: []memory.Version{live("b", 1), live("a", 2), live("a", 1)},
			code: memory.CodeInvalid, index: 1, mention: "a v2 does not follow"},
		{name: "a slug's versions twice in one batch", batch: []memory.Version{live("a", 1), live("a", 2), live("a", 2)},
			skipped: 1, imported: 2},
		{name: "tombstone as the first version", batch: []memory.Version{live("b", 1), tomb("a", 1)},
			code: memory.CodeInvalid, index: 1, mention: "a v1: a tombstone cannot be the first version"},
		{name: "tombstone after a tombstone in the batch", batch: []memory.Version{live("a", 1), tomb("a", 2), tomb("a", 3)},
			code: memory.CodeInvalid, index: 2, mention: "a v3: a tombstone cannot follow a tombstone"},
		{name: "tombstone after a stored tombstone", stored: []memory.Version{live("a", 1), tomb("a", 2)},
			batch: []memory.Version{live("b", 1), tomb("a", 3)},
			code:  memory.CodeInvalid, index: 1, mention: "a v3: a tombstone cannot follow a tombstone"},
		{name: "identical versions are skipped", stored: []memory.Version{live("a", 1), tomb("a", 2)},
			batch: []memory.Version{live("a", 1), tomb("a", 2), live("a", 3)}, skipped: 2, imported: 1},
		{name: "no tags and empty tags are the same", stored: []memory.Version{with(live("a", 1), func(v *memory.Version) { v.Tags = nil })},
			batch: []memory.Version{with(live("a", 1), func(v *memory.Version) { v.Tags = []string{} })}, skipped: 1},
	}
	for _, field := range []struct {
		name   string
		change func(*memory.Version)
	}{
		{"title", func(v *memory.Version) { v.Title = "another title" }},
		{"content", func(v *memory.Version) { v.Content = "other content" }},
		{"tags", func(v *memory.Version) { v.Tags = []string{"other"} }},
		{"agent", func(v *memory.Version) { v.Agent = "someone-else" }},
		{"created_at", func(v *memory.Version) { v.CreatedAt = v.CreatedAt.Add(time.Nanosecond) }},
	} {
		cases = append(cases, importCase{name: "stored with another " + field.name,
			stored: []memory.Version{live("a", 1), live("a", 2)},
			batch:  []memory.Version{live("b", 1), live("a", 1), with(live("a", 2), field.change)},
			code:   memory.CodeConflict, index: 2, mention: "a v2 already exists with a different " + field.name})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTest(t)
			ref := ensure(t, s, "team", "p")
			ctx := context.Background()
			if len(c.stored) > 0 {
				if _, err := s.ImportVersions(ctx, ref, c.stored, memory.DefaultMaxContent); err != nil {
					t.Fatalf("store the versions before: %v", err)
				}
			}
			before := allVersions(t, s, ref)
			res, err := s.ImportVersions(ctx, ref, c.batch, memory.DefaultMaxContent)
			if c.code == "" {
				if err != nil {
					t.Fatalf("import: %v", err)
				}
				if res != (ImportResult{Imported: c.imported, Skipped: c.skipped}) {
					t.Errorf("result %+v, want %d imported, %d skipped", res, c.imported, c.skipped)
				}
				checkLatest(t, s, ref, c.batch)
				return
			}
			wantImportError(t, err, c.code, c.index, c.mention)
			if res != (ImportResult{}) {
				t.Errorf("a refused batch reports %+v", res)
			}
			if after := allVersions(t, s, ref); !slices.EqualFunc(before, after, sameVersion) {
				t.Errorf("a refused batch changed the project:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// A version an import brings is checked like a remember before anything is
// written; the refused one is named by its index in the batch.
func TestImportValidatesEachVersion(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "p")
	cases := []struct {
		name    string
		change  func(*memory.Version)
		code    memory.Code
		mention string
	}{
		{"bad slug", func(v *memory.Version) { v.Slug = "../etc" }, memory.CodeInvalid, "slug"},
		{"version 0", func(v *memory.Version) { v.Version = 0 }, memory.CodeInvalid, "version 0 must be 1 or more"},
		{"no time", func(v *memory.Version) { v.CreatedAt = time.Time{} }, memory.CodeInvalid, "created_at is missing"},
		{"time beyond 2262", func(v *memory.Version) { v.CreatedAt = time.Now().AddDate(300, 0, 0) }, memory.CodeInvalid, "outside 1678–2262"},
		{"no agent", func(v *memory.Version) { v.Agent = "" }, memory.CodeInvalid, "agent must not be empty"},
		{"empty content", func(v *memory.Version) { v.Content = " \n" }, memory.CodeInvalid, "content must not be empty"},
		{"tombstone with content", func(v *memory.Version) { v.Deleted = true }, memory.CodeInvalid, "a tombstone (deleted) carries no content"},
		{"content too large", func(v *memory.Version) { v.Content = strings.Repeat("x", 65) }, memory.CodeTooLarge, "content is 65 bytes"},
		{"NUL in content", func(v *memory.Version) { v.Content = "a\x00b" }, memory.CodeInvalid, "NUL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batch := []memory.Version{live("a", 1), live("b", 1), with(live("c", 1), c.change)}
			_, err := s.ImportVersions(context.Background(), ref, batch, 64)
			wantImportError(t, err, c.code, 2, c.mention)
			if got := allVersions(t, s, ref); len(got) != 0 {
				t.Errorf("a refused batch stored %v", got)
			}
		})
	}
	_, err := s.ImportVersions(context.Background(), memory.ProjectRef{Workspace: "team", Project: "nowhere"},
		[]memory.Version{live("a", 1)}, memory.DefaultMaxContent)
	wantCode(t, err, memory.CodeNotFound)
}

// An imported version becomes the entry's latest state as a remember or a
// forget would make it, and leaves an audit row of action "import" with the
// version's own agent and time.
func TestImportSetsLatestStateAndAudit(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "p")
	ctx := context.Background()
	gone := with(tomb("a", 2), func(v *memory.Version) { v.Agent = "forgetter" })
	if _, err := s.ImportVersions(ctx, ref, []memory.Version{live("a", 1), gone}, memory.DefaultMaxContent); err != nil {
		t.Fatal(err)
	}
	v, latest, err := s.Get(ctx, ref, "a", 0)
	if err != nil || latest != 2 || !v.Deleted || v.Agent != "forgetter" || !v.CreatedAt.Equal(gone.CreatedAt) {
		t.Fatalf("latest after importing a tombstone: %+v, latest %d, %v", v, latest, err)
	}
	// A remember after the import continues the numbering.
	if res := put(t, s, ref, "a", "again"); res.Version != 3 {
		t.Errorf("remember after the import wrote v%d, want v3", res.Version)
	}
	rows, err := s.AuditRows(ctx, ref, memory.LogFilter{Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, r := range rows {
		if r.Action == actionImport {
			imports = append(imports, fmt.Sprintf("%s v%d %s %v", r.Slug, r.Version, r.Agent, r.At.Equal(importBase.Add(time.Duration(r.Version)*time.Minute))))
		}
	}
	want := []string{"a v2 forgetter true", "a v1 exporter true"}
	if !slices.Equal(imports, want) {
		t.Errorf("import audit rows %q, want %q", imports, want)
	}
}

// allVersions is every stored version of a project, in the store's order.
func allVersions(t *testing.T, s *Store, ref memory.ProjectRef) []memory.Version {
	t.Helper()
	var out []memory.Version
	if err := s.ScanVersions(context.Background(), ref, func(v memory.Version) error {
		out = append(out, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameVersion(a, b memory.Version) bool {
	return a.Slug == b.Slug && a.Version == b.Version && a.Title == b.Title && a.Content == b.Content &&
		slices.Equal(a.Tags, b.Tags) && a.Agent == b.Agent && a.Deleted == b.Deleted && a.CreatedAt.Equal(b.CreatedAt)
}

// checkLatest checks that each slug's last version in batch is its latest
// state, tombstone flag included.
func checkLatest(t *testing.T, s *Store, ref memory.ProjectRef, batch []memory.Version) {
	t.Helper()
	last := map[string]memory.Version{}
	for _, v := range batch {
		last[v.Slug] = v
	}
	for slug, want := range last {
		got, latest, err := s.Get(context.Background(), ref, slug, 0)
		if err != nil || latest != want.Version || got.Deleted != want.Deleted || got.Content != want.Content {
			t.Errorf("latest of %s: %+v (latest %d, %v), want v%d deleted=%v", slug, got, latest, err, want.Version, want.Deleted)
		}
	}
}

// wantImportError fails unless err is an *ImportError at index with code
// and a message containing mention.
func wantImportError(t *testing.T, err error, code memory.Code, index int, mention string) {
	t.Helper()
	var ie *ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an ImportError", err)
	}
	if ie.Index != index || memory.ErrorCode(err) != code || !strings.Contains(err.Error(), mention) {
		t.Fatalf("err = %v (index %d, code %s), want index %d, code %s, mentioning %q", err, ie.Index, memory.ErrorCode(err), index, code, mention)
	}
}
