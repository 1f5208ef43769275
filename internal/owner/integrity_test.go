package owner

import (
	"context"
	"path/filepath"
	"testing"

	"munin/internal/memory"
	"munin/internal/store/storetest"
)

// A takeover whose restored file opens but fails PRAGMA integrity_check
// (a damaged index page) answers unavailable and serves nothing: the
// workspace does not stay open, is not replicated into the new epoch, and
// the new epoch is not recorded as the one to restore.
func TestTakeoverRefusesAFileFailingIntegrityCheck(t *testing.T) {
	prev, replica := previousOwner(t, "one", "zz-marker")
	storetest.CorruptIndexKey(t, filepath.Join(replica, "db"), "sqlite_autoindex_versions_1", "zz-marker")

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
