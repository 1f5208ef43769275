// Package storetest holds what tests of several packages do to workspace
// files. Only tests import it.
package storetest

import (
	"bytes"
	"database/sql"
	"os"
	"testing"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// CorruptIndexKey damages one b-tree page of the SQLite file at path in
// place: inside the root page of index, the first occurrence of marker (a
// key the index holds) gets its last byte changed. The page's structure
// stays intact, so the file opens and reads that do not use the index work;
// only PRAGMA integrity_check sees that the index no longer matches its
// table. The index must fit in its root page (a few rows).
func CorruptIndexKey(t testing.TB, path, index, marker string) {
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
	if err != nil || root < 2 {
		t.Fatalf("find index %s in %s: root page %d, %v", index, path, root, err)
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
