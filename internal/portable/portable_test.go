package portable

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/store"
)

var ctx = context.Background()

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ensure(t testing.TB, s *store.Store, w, p string) memory.ProjectRef {
	t.Helper()
	ref := memory.ProjectRef{Workspace: w, Project: p}
	if _, err := s.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

func write(t testing.TB, s *store.Store, ref memory.ProjectRef, w memory.Write) {
	t.Helper()
	if w.Agent == "" {
		w.Agent = "agent-a"
	}
	if _, err := s.Append(ctx, ref, w); err != nil {
		t.Fatalf("append %s: %v", w.Slug, err)
	}
}

// fill writes a project with several slugs, many versions, tombstones, a
// slug remembered again after forget, tags and unicode content.
func fill(t testing.TB, s *store.Store, ref memory.ProjectRef) {
	t.Helper()
	contents := []string{
		"We use SQLite in WAL mode.",
		"Grüße aus Köln — Datenbanken 🚀 日本語のテキスト",
		"<script>alert(1)</script> & \"quotes\" \\ backslash\n\nsecond paragraph\twith tab",
		"emoji 👩‍💻 and combining é and \u2028 line separator",
	}
	for i := range 12 {
		slug := fmt.Sprintf("notes/topic-%02d", i)
		for v := range 1 + i%4 {
			write(t, s, ref, memory.Write{Slug: slug, Title: fmt.Sprintf("Topic %d, take %d", i, v),
				Content: contents[(i+v)%len(contents)] + fmt.Sprintf(" (%d/%d)", i, v),
				Tags:    []string{"team:infra", fmt.Sprintf("t%d", i%3)}[:1+v%2], Agent: fmt.Sprintf("agent-%d", v%3)})
		}
		if i%5 == 0 {
			write(t, s, ref, memory.Write{Slug: slug, Deleted: true, Agent: "janitor"})
		}
	}
	write(t, s, ref, memory.Write{Slug: "notes/topic-00", Title: "Back again", Content: "remembered after forget"})
	write(t, s, ref, memory.Write{Slug: "decisions/db-choice", Title: "Datenbankwahl", Content: "Wir nehmen SQLite.", Tags: []string{"db", "arch"}})
}

// filled returns a filled project in a fresh data directory and its export.
func filled(t testing.TB) (*store.Store, memory.ProjectRef, []byte) {
	t.Helper()
	s := openStore(t, t.TempDir())
	ref := ensure(t, s, "acme", "backend")
	fill(t, s, ref)
	return s, ref, export(t, s, ref)
}

func export(t testing.TB, s *store.Store, ref memory.ProjectRef) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := Export(ctx, s, ref, &b); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return b.Bytes()
}

// countAudit counts the audit rows of a workspace file by action.
func countAudit(t testing.TB, s *store.Store, workspace string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+s.WorkspaceFile(workspace)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT action, count(*) FROM audit_log GROUP BY action")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			t.Fatal(err)
		}
		out[a] = n
	}
	return out
}

// TestExportImportRoundTrip: export → import into an empty data directory
// → export gives the same bytes, and get, list, history and recall answer
// the same; a second import changes nothing.
func TestExportImportRoundTrip(t *testing.T) {
	src, ref, first := filled(t)
	lines := bytes.Count(first, []byte("\n"))
	if lines < 30 || !bytes.Contains(first, []byte(`"deleted":true`)) || !bytes.Contains(first, []byte("日本語")) {
		t.Fatalf("export of %d lines lacks tombstones or unicode:\n%s", lines, first)
	}

	dst := openStore(t, t.TempDir())
	res, err := Import(ctx, dst, ref, bytes.NewReader(first), ImportOptions{BatchSize: 7})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if !res.Created || res.Lines != lines || res.Imported != lines || res.Skipped != 0 {
		t.Fatalf("import result %+v, want %d lines all imported into a new project", res, lines)
	}
	second := export(t, dst, ref)
	if !bytes.Equal(first, second) {
		t.Fatalf("re-export differs:\n%s\n---\n%s", first, second)
	}
	sameState(t, "the imported project", state(t, src, ref), state(t, dst, ref))
	audit := countAudit(t, dst, "acme")
	if audit["import"] != lines || len(audit) != 1 {
		t.Fatalf("audit rows after import = %v, want %d import rows", audit, lines)
	}
	// Imports do not spend the write budget, though the versions are minutes old.
	if n, err := dst.CountWritesSince(ctx, ref, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("writes counted against the budget after import = %d, %v; want 0", n, err)
	}

	again, err := Import(ctx, dst, ref, bytes.NewReader(first), ImportOptions{})
	if err != nil || again.Imported != 0 || again.Skipped != lines || again.Created {
		t.Fatalf("second import = %+v, %v; want every version skipped", again, err)
	}
	if third := export(t, dst, ref); !bytes.Equal(first, third) {
		t.Fatal("a second import changed the export")
	}
	if got := countAudit(t, dst, "acme"); got["import"] != lines {
		t.Fatalf("audit rows after the second import = %v, want still %d", got, lines)
	}
}

// An import that stops half-way continues on a second run: the batches that
// went in are skipped, the rest is written.
func TestImportResumesAfterPartialRun(t *testing.T) {
	_, ref, all := filled(t)
	ls := bytes.SplitAfter(all, []byte("\n"))
	half := bytes.Join(ls[:len(ls)/2], nil)

	dst := openStore(t, t.TempDir())
	if _, err := Import(ctx, dst, ref, bytes.NewReader(half), ImportOptions{BatchSize: 5}); err != nil {
		t.Fatal(err)
	}
	res, err := Import(ctx, dst, ref, bytes.NewReader(all), ImportOptions{BatchSize: 5})
	if err != nil || res.Skipped != len(ls)/2 {
		t.Fatalf("resumed import = %+v, %v; want %d skipped", res, err, len(ls)/2)
	}
	if !bytes.Equal(all, export(t, dst, ref)) {
		t.Fatal("resumed import does not reproduce the history")
	}
}

const okLine = `{"slug":"fresh/one","version":1,"title":"t","content":"new","tags":[],"agent":"a","created_at":"2026-01-02T03:04:05.123456789Z","deleted":false}`

// refused imports base into a fresh data directory, then file, and fails
// the test unless file is refused with code and an error naming each of
// want, and nothing of it was written (the export is unchanged).
func refused(t *testing.T, ref memory.ProjectRef, base, file string, opts ImportOptions, code memory.Code, want []string) {
	t.Helper()
	dst := openStore(t, t.TempDir())
	if _, err := Import(ctx, dst, ref, strings.NewReader(base), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	before := export(t, dst, ref)
	_, err := Import(ctx, dst, ref, strings.NewReader(file), opts)
	if memory.ErrorCode(err) != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if after := export(t, dst, ref); !bytes.Equal(before, after) {
		t.Fatalf("a refused import wrote something:\n%s", after)
	}
}

// Bad input names the line and the problem, and nothing of its batch is
// written — not even the good line before it.
func TestImportRefusesBadLines(t *testing.T) {
	src := openStore(t, t.TempDir())
	ref := ensure(t, src, "acme", "backend")
	write(t, src, ref, memory.Write{Slug: "kept", Title: "K", Content: "original", Agent: "a"})
	exported := string(export(t, src, ref))
	changed := strings.Replace(exported, `"original"`, `"tampered"`, 1)
	at := func(v int, extra string) string {
		return fmt.Sprintf(`{"slug":"gap","version":%d,"title":"","content":"x","tags":[],"agent":"a","created_at":"2026-01-02T03:04:05Z"%s}`, v, extra)
	}
	cases := []struct {
		name, file string
		code       memory.Code
		want       []string
	}{
		{"changed version", okLine + "\n" + changed, memory.CodeConflict, []string{"line 2", "kept v1", "content"}},
		{"gap", okLine + "\n" + at(1, "") + "\n" + at(3, ""), memory.CodeInvalid, []string{"line 3", "gap v3", "gapless"}},
		{"bad slug", okLine + "\n" + strings.Replace(okLine, "fresh/one", "../etc", 1), memory.CodeInvalid, []string{"line 2", "slug"}},
		{"broken json", okLine + "\n{\"slug\":", memory.CodeInvalid, []string{"line 2", "not a version object"}},
		{"unknown field", okLine + "\n\n" + at(1, `,"extra":1`), memory.CodeInvalid, []string{"line 3", "extra"}},
		{"bad time", strings.Replace(okLine, "2026-01-02T03:04:05.123456789Z", "yesterday", 1), memory.CodeInvalid, []string{"line 1", "created_at"}},
		{"time past 2262", strings.Replace(okLine, "2026-01-02T03:04:05.123456789Z", "3000-01-01T00:00:00Z", 1), memory.CodeInvalid, []string{"line 1", "created_at", "1678–2262"}},
		{"time before 1678", strings.Replace(okLine, "2026-01-02T03:04:05.123456789Z", "1000-01-01T00:00:00Z", 1), memory.CodeInvalid, []string{"line 1", "created_at", "1678–2262"}},
		{"invalid utf-8", okLine + "\n" + strings.Replace(okLine, `"new"`, "\"\xff\"", 1), memory.CodeInvalid, []string{"line 2", "UTF-8"}},
		{"lone surrogate escape", okLine + "\n" + strings.Replace(okLine, `"new"`, `"\ud800"`, 1), memory.CodeInvalid, []string{"line 2", "surrogate"}},
		{"bad tag", okLine + "\n" + strings.Replace(at(1, ""), `"tags":[]`, `"tags":["no spaces"]`, 1), memory.CodeInvalid, []string{"line 2", "tag"}},
		{"tombstone first", okLine + "\n" + strings.Replace(at(1, `,"deleted":true`), `"content":"x"`, `"content":""`, 1), memory.CodeInvalid, []string{"line 2", "first version"}},
		{"content too large", strings.Replace(okLine, `"new"`, `"`+strings.Repeat("x", 100)+`"`, 1), memory.CodeTooLarge, []string{"line 1", "content"}},
		{"no agent", strings.Replace(okLine, `"agent":"a"`, `"agent":""`, 1), memory.CodeInvalid, []string{"line 1", "agent"}},
		// Titles and agent names that remember and key creation refuse.
		{"newline in title", okLine + "\n" + strings.Replace(okLine, `"title":"t"`, `"title":"a\nb"`, 1), memory.CodeInvalid, []string{"line 2", "title", "U+000A"}},
		{"ESC in title", okLine + "\n" + strings.Replace(okLine, `"title":"t"`, `"title":"\u001b[2J"`, 1), memory.CodeInvalid, []string{"line 2", "title", "U+001B"}},
		{"bidi in title", okLine + "\n" + strings.Replace(okLine, `"title":"t"`, `"title":"a\u202eb"`, 1), memory.CodeInvalid, []string{"line 2", "title", "U+202E"}},
		{"newline in agent", okLine + "\n" + strings.Replace(okLine, `"agent":"a"`, `"agent":"a\nb"`, 1), memory.CodeInvalid, []string{"line 2", "agent"}},
		{"ESC in agent", okLine + "\n" + strings.Replace(okLine, `"agent":"a"`, `"agent":"\u001b[31mroot"`, 1), memory.CodeInvalid, []string{"line 2", "agent"}},
		{"bidi in agent", okLine + "\n" + strings.Replace(okLine, `"agent":"a"`, `"agent":"a\u202eb"`, 1), memory.CodeInvalid, []string{"line 2", "agent"}},
		{"empty content", okLine + "\n" + strings.Replace(at(1, ""), `"content":"x"`, `"content":" \n"`, 1), memory.CodeInvalid, []string{"line 2", "gap v1", "content must not be empty"}},
		{"duplicate name", okLine + "\n" + strings.Replace(okLine, `"agent":"a"`, `"agent":"a","agent":"b"`, 1), memory.CodeInvalid, []string{"line 2", `duplicate key "agent"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused(t, ref, exported, c.file, ImportOptions{MaxContent: 64}, c.code, c.want)
		})
	}
}

func TestReindexCountsLiveEntries(t *testing.T) {
	s := openStore(t, t.TempDir())
	a := ensure(t, s, "acme", "backend")
	b := ensure(t, s, "acme", "empty")
	for i := range 40 {
		write(t, s, a, memory.Write{Slug: fmt.Sprintf("e/%02d", i), Title: fmt.Sprintf("Entry %d", i), Content: fmt.Sprintf("body word%d", i)})
	}
	for i := range 6 {
		write(t, s, a, memory.Write{Slug: fmt.Sprintf("e/%02d", i*5), Deleted: true})
	}
	var progress bytes.Buffer
	data := t.TempDir()
	res, err := Reindex(ctx, s, data, nil, &progress)
	if err != nil {
		t.Fatalf("Reindex: %v", err)
	}
	if len(res) != 2 || res[0].Ref != a || res[1].Ref != b {
		t.Fatalf("results %+v, want both projects", res)
	}
	if r := res[0]; r.Live != 34 || r.Scanned != 34 || r.Docs != 34 || r.Hits == 0 {
		t.Fatalf("backend: %+v, want 34 live entries = documents and a probe hit", r)
	}
	if r := res[1]; r.Docs != 0 || r.Probe != "" {
		t.Fatalf("empty project: %+v", r)
	}
	if !strings.Contains(progress.String(), "acme/backend") || !strings.Contains(progress.String(), "34/34") {
		t.Fatalf("progress output %q lacks the project and its count", progress.String())
	}
	// A server on the data directory opens the index reindex built, without
	// building it: a live entry is found, a forgotten one is not.
	reg := search.NewRegistry(s, search.Options{Dir: search.IndexRoot(data), Logger: slog.New(slog.DiscardHandler)})
	defer reg.Close()
	for word, want := range map[string]int{"word7": 1, "word10": 0} {
		hits, err := reg.Search(ctx, a, memory.SearchQuery{Text: word})
		if err != nil || len(hits) != want {
			t.Fatalf("recall %s = %+v, %v; want %d hits", word, hits, err, want)
		}
	}
	if st := reg.Stats(); st.Builds != 0 || st.Opened != 1 {
		t.Fatalf("after reindex the server built %d and opened %d indexes, want 0 and 1", st.Builds, st.Opened)
	}
	if _, err := Reindex(ctx, s, t.TempDir(), []memory.ProjectRef{{Workspace: "acme", Project: "nope"}}, &progress); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("reindex of an unknown project: %v", err)
	}
}

func TestBackupReport(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ref := ensure(t, s, "acme", "backend")
	fill(t, s, ref)
	var out bytes.Buffer
	dest := filepath.Join(t.TempDir(), "copy")
	if _, err := Backup(ctx, dir, dest, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"_control.db", "acme.db", "integrity ok", "backup complete: 2 files"} {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("report lacks %q:\n%s", w, out.String())
		}
	}
	// The copy is a data directory with the same history.
	if !bytes.Equal(export(t, s, ref), export(t, openStore(t, dest), ref)) {
		t.Fatal("the backup's export differs from the source's")
	}
}

func TestParseRef(t *testing.T) {
	for in, ok := range map[string]bool{"acme/backend": true, "acme": false, "acme/": false, "../x/y": false, "a/b/c": false} {
		if _, err := ParseRef(in); (err == nil) != ok {
			t.Errorf("ParseRef(%q) = %v", in, err)
		}
	}
}

// A refused first batch leaves no empty project behind.
func TestImportOfBadFileCreatesNoProject(t *testing.T) {
	s := openStore(t, t.TempDir())
	ref := memory.ProjectRef{Workspace: "acme", Project: "new"}
	bad := okLine + "\n" + `{"slug":"../bad","version":1}`
	_, err := Import(ctx, s, ref, strings.NewReader(bad), ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "slug") {
		t.Fatalf("import of a bad slug: %v, want an error naming line 2 and the slug", err)
	}
	if _, err := s.Project(ctx, ref); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("project after a refused import: %v, want not_found", err)
	}
}

// The search index under <data>/index is derived from the database: a
// backup copies the database files only, so the copy holds no index and the
// server rebuilds it there on first use.
func TestBackupLeavesTheIndexOut(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ref := ensure(t, s, "acme", "backend")
	fill(t, s, ref)
	junk := filepath.Join(dir, "index", "acme", "backend")
	if err := os.MkdirAll(junk, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "root.bolt"), []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "copy")
	rep, err := Backup(ctx, dir, dest, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	for _, f := range rep.Files {
		copied[f.Name] = true
	}
	ents, err := os.ReadDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(copied) != 2 || !copied["_control.db"] || !copied["acme.db"] {
		t.Fatalf("backed up %v, want _control.db and acme.db", rep.Files)
	}
	for _, e := range ents {
		// Verifying a copy read-only leaves SQLite's -wal (empty) and -shm beside it.
		db := strings.TrimSuffix(strings.TrimSuffix(e.Name(), "-wal"), "-shm")
		if e.IsDir() || !copied[db] {
			t.Errorf("the backup holds %s, which is not a verified database file", e.Name())
		}
	}
}
