package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"munin/internal/memory"
)

// setMaxPages limits the workspace file to n pages on the writer connection
// (max_page_count is per connection), through the writer like any write.
func setMaxPages(t *testing.T, s *Store, ref memory.ProjectRef, n int) {
	t.Helper()
	ws, err := s.requireProject(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.submit(context.Background(), func(tx *sql.Tx) (any, error) {
		_, err := tx.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", n))
		return nil, err
	}); err != nil {
		t.Fatal(err)
	}
}

func pageCount(t *testing.T, s *Store, ref memory.ProjectRef) int {
	t.Helper()
	ws, _ := s.requireProject(context.Background(), ref)
	var n int
	if err := ws.pool.reader.QueryRow("PRAGMA page_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fillUntilFull appends distinct 4 KiB entries until a write fails and
// returns the acknowledged slugs and the first error.
func fillUntilFull(t *testing.T, s *Store, ref memory.ProjectRef, prefix string) ([]string, error) {
	t.Helper()
	var acked []string
	for i := 0; i < 100_000; i++ {
		slug := fmt.Sprintf("%s/%05d", prefix, i)
		_, err := s.Append(context.Background(), ref, memory.Write{Slug: slug, Content: strings.Repeat(fmt.Sprintf("%05d ", i), 700), Agent: "filler"})
		if err != nil {
			return acked, err
		}
		acked = append(acked, slug)
	}
	t.Fatal("storage never filled up")
	return nil, nil
}

// checkFullBehaviour is what a full disk must look like: a clear error,
// every acknowledged write readable, reads working.
func checkFullBehaviour(t *testing.T, s *Store, ref memory.ProjectRef, acked []string, err error) {
	t.Helper()
	if memory.ErrorCode(err) != memory.CodeUnavailable || !strings.Contains(err.Error(), "storage is full") {
		t.Fatalf("write on a full database: %v, want unavailable: storage is full", err)
	}
	if len(acked) == 0 {
		t.Fatal("nothing was written before the storage filled: the test proves nothing")
	}
	for _, slug := range acked {
		if v, _, err := s.Get(context.Background(), ref, slug, 0); err != nil || v.Version != 1 {
			t.Fatalf("acknowledged %s after the disk filled: %+v, %v", slug, v, err)
		}
	}
	entries, _, err := s.List(context.Background(), ref, memory.ListQuery{Limit: 200})
	if err != nil || len(entries) != min(len(acked), 200) {
		t.Fatalf("list on a full database: %d entries, %v", len(entries), err)
	}
}

// TestDatabaseFull makes SQLite itself run out of room (max_page_count gives
// the same SQLITE_FULL a full disk gives): writes fail clearly, nothing
// acknowledged is missing, reads keep working, and writes succeed again once
// there is room.
func TestDatabaseFull(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "full", "p")
	setMaxPages(t, s, ref, pageCount(t, s, ref)+60)

	acked, err := fillUntilFull(t, s, ref, "fill")
	checkFullBehaviour(t, s, ref, acked, err)
	if err := s.AppendSearchLog(context.Background(), []memory.SearchLogRow{{Project: ref, Agent: "a", Query: strings.Repeat("q", 8000)}}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("search log on a full database: %v, want unavailable", err)
	}

	setMaxPages(t, s, ref, 1<<30) // space is freed
	if res, err := s.Append(context.Background(), ref, memory.Write{Slug: "after/full", Content: "room again", Agent: "a"}); err != nil || res.Version != 1 {
		t.Fatalf("write after space was freed: %+v, %v", res, err)
	}
	if res, err := s.Append(context.Background(), ref, memory.Write{Slug: acked[0], Content: "v2", Agent: "a"}); err != nil || res.Version != 2 {
		t.Fatalf("next version after the full disk: %+v, %v (want gapless v2)", res, err)
	}
}

// TestRealFilesystemFull runs the same on a 3 MiB tmpfs: the kernel's ENOSPC
// instead of SQLite's page limit. It needs permission to mount (root).
func TestRealFilesystemFull(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })

	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := ensure(t, s, "disk", "p")
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	acked, err := fillUntilFull(t, s, ref, "fill")
	checkFullBehaviour(t, s, ref, acked, err)

	if err := os.Remove(ballast); err != nil { // space is freed
		t.Fatal(err)
	}
	if res, err := s.Append(context.Background(), ref, memory.Write{Slug: "after/full", Content: "room again", Agent: "a"}); err != nil || res.Version != 1 {
		t.Fatalf("write after space was freed: %+v, %v", res, err)
	}
}
