package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
)

// corruptIndexKey damages one b-tree page of the SQLite file at path in
// place: inside the root page of index, the first occurrence of marker (a
// key the index holds) gets its last byte changed. The page's structure
// stays intact, so the file opens and reads that do not use the index work;
// only PRAGMA integrity_check sees that the index no longer matches its
// table. The index must fit in its root page (a few rows).
func corruptIndexKey(t *testing.T, path, index, marker string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize, root int
	err = db.QueryRow("PRAGMA page_size").Scan(&pageSize)
	if err == nil {
		err = db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND name = ?", index).Scan(&root)
	}
	if err == nil { // everything into the main file: the WAL goes away
		_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("find index %s in %s: %v", index, path, err)
	}
	if root < 2 {
		t.Fatalf("index %s has root page %d", index, root)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := b[(root-1)*pageSize : root*pageSize]
	i := bytes.Index(page, []byte(marker))
	if i < 0 {
		t.Fatalf("%q is not in the root page %d of index %s", marker, root, index)
	}
	page[i+len(marker)-1]++
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// CheckIntegrity passes an intact workspace file and refuses one whose
// b-tree is damaged although the file opens and serves reads: that is the
// file a takeover must not serve (cluster mode, internal/owner AfterOpen).
func TestCheckIntegrity(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	ref := ensure(t, s, "team", "p")
	for i := range 3 {
		put(t, s, ref, fmt.Sprintf("notes/s%d", i), "content")
	}
	put(t, s, ref, "zz-marker", "the damaged key")
	path := s.WorkspaceFile("team")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := CheckIntegrity(ctx, path); err != nil {
		t.Fatalf("intact file: %v", err)
	}

	corruptIndexKey(t, path, "sqlite_autoindex_versions_1", "zz-marker")
	err := CheckIntegrity(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "integrity_check") {
		t.Fatalf("damaged index: %v, want an integrity_check error", err)
	}
	t.Logf("damaged file: %v", err)

	// The damage is one that only the check finds: the store opens the file
	// and reads from it.
	s = openAt(t, dir)
	if v, _, err := s.Get(ctx, ref, "notes/s1", 0); err != nil || v.Content != "content" {
		t.Fatalf("read from the damaged file: %+v %v", v, err)
	}
	if err := CheckIntegrity(ctx, t.TempDir()+"/missing.db"); err == nil {
		t.Fatal("a missing file passed the integrity check")
	}
}
