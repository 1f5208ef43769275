package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2"
)

// TestUntrustedIndexIsRebuilt: an index on disk of another format, without
// a mark, or with a segment whose checksum fails is built anew from the
// Source, never opened and caught up.
func TestUntrustedIndexIsRebuilt(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"other format", func(t *testing.T, dir string) { setKey(t, dir, FormatKey, []byte("0")) }},
		{"no mark", func(t *testing.T, dir string) { setKey(t, dir, MarkKey, nil) }},
		{"segment corrupted", func(t *testing.T, dir string) {
			names, err := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
			if err != nil || len(names) == 0 {
				t.Fatalf("no segment files: %v", err)
			}
			b, err := os.ReadFile(names[0])
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/3] ^= 0xff
			if err := os.WriteFile(names[0], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newSource()
			dir := filepath.Join(t.TempDir(), "idx")
			var n Counters
			p := New(testConfig(t, src, dir, &n))
			if got := docs(t, p); got != 5 {
				t.Fatalf("%d docs, want 5", got)
			}
			p.Close()
			c.spoil(t, dir)
			p = New(testConfig(t, src, dir, &n))
			defer p.Close()
			if got := docs(t, p); got != 5 || n.Builds.Load() != 2 || n.Opened.Load() != 0 {
				t.Fatalf("after spoiling: %d docs, %d builds, %d opened; want 5, 2, 0", got, n.Builds.Load(), n.Opened.Load())
			}
		})
	}
}

// setKey sets (or, for nil, deletes) an internal key of the closed index at dir.
func setKey(t *testing.T, dir string, key, val []byte) {
	t.Helper()
	idx, err := bleve.OpenUsing(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := idx.NewBatch()
	if val == nil {
		b.DeleteInternal(key)
	} else {
		b.SetInternal(key, val)
	}
	if err := idx.Batch(b); err != nil {
		t.Fatal(err)
	}
	WaitPersisted(idx)
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
}
