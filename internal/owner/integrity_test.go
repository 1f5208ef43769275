package owner

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"munin/internal/memory"
)

// corruptIndexKey damages one b-tree page of the SQLite file at path in
// place (as internal/store's test of CheckIntegrity does): inside the root
// page of index, the first occurrence of marker gets its last byte changed.
// The file still opens and reads; only PRAGMA integrity_check finds it.
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
	if err == nil {
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

// A takeover whose restored file opens but fails PRAGMA integrity_check
// (a damaged index page) answers unavailable and serves nothing: the
// workspace does not stay open, is not replicated into the new epoch, and
// the new epoch is not recorded as the one to restore.
func TestTakeoverRefusesAFileFailingIntegrityCheck(t *testing.T) {
	c := newFakeCluster("http://a", "http://a")
	prev := newNode(t, c, Options{})
	routeSelf(t, prev)
	for _, s := range []string{"one", "zz-marker"} {
		if err := write(prev, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := prev.st.CloseWorkspace("team"); err != nil {
		t.Fatal(err)
	}
	replica := prev.r.EpochURL("team", 3)
	copyFile(t, filepath.Join(prev.m.opts.DataDir, "team.db"), filepath.Join(replica, "db"))
	corruptIndexKey(t, filepath.Join(replica, "db"), "sqlite_autoindex_versions_1", "zz-marker")

	c2 := newFakeCluster("http://b", "http://b")
	c2.recorded["team"] = 3
	n := newNode(t, c2, Options{})
	n.r.dir = prev.r.dir
	routeSelf(t, n)
	_, _, err := n.st.Get(context.Background(), ref, "one", 0)
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("read after restoring a damaged file: %v, want unavailable", err)
	}
	if len(n.r.restored) == 0 || n.r.restored[0] != replica {
		t.Fatalf("restored from %v, want %s", n.r.restored, replica)
	}
	if _, open := n.st.Stats().Workspaces["team"]; open {
		t.Error("the damaged workspace stayed open")
	}
	n.r.mu.Lock()
	url, replicating := n.r.registered[filepath.Join(n.m.opts.DataDir, "team.db")]
	n.r.mu.Unlock()
	if replicating {
		t.Errorf("the damaged file replicates into %s", url)
	}
	if c2.recorded["team"] != 3 {
		t.Errorf("recorded epoch %d, want still 3", c2.recorded["team"])
	}
}
