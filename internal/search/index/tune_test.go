package index

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestBoltFilesUseSmallPages: once the process is tuned, a new index's bolt
// file has pages of boltPageSize, not the system's 4 KiB (see TuneProcess).
func TestBoltFilesUseSmallPages(t *testing.T) {
	TuneProcess()
	dir := t.TempDir()
	var c Counters
	p := New(testConfig(t, newSource(), dir, &c))
	if n := docs(t, p); n != 5 {
		t.Fatalf("%d docs, want 5", n)
	}
	p.Close()
	db, err := bolt.Open(filepath.Join(dir, "store", "root.bolt"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Info().PageSize; got != boltPageSize {
		t.Fatalf("bolt page size %d, want %d", got, boltPageSize)
	}
}
