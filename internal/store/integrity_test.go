package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"munin/internal/store/storetest"
)

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

	storetest.CorruptIndexKey(t, path, "sqlite_autoindex_versions_1", "zz-marker")
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
