package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/search/searchtest"
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
			cfg := testConfig(t, src, dir, &n)
			cfg.PersistNap = time.Millisecond // Close waits until the index is on disk
			p := New(cfg)
			if got := docs(t, p); got != 5 {
				t.Fatalf("%d docs, want 5", got)
			}
			p.Close()
			c.spoil(t, dir)
			p = New(cfg)
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

// TestBuildInParallelBatches: a build whose batches are applied several at
// once (BuildOffline: munin reindex) holds every entry once, each found by
// its own word whichever batch it fell in, and records its mark after all of
// them: a reopen catches up instead of building again. 0 is the server's
// build, one batch after the other.
func TestBuildInParallelBatches(t *testing.T) {
	const n, batch = 100, 7
	word := uniqueWord
	src := searchtest.NewSource()
	for i := range n {
		src.Put(ref, fmt.Sprintf("e%03d", i), "T", "common "+word(i))
	}
	old := buildBatchesAtOnce.Load()
	defer buildBatchesAtOnce.Store(old)
	for _, atOnce := range []int32{0, 1, 3} {
		t.Run(fmt.Sprint(atOnce), func(t *testing.T) {
			buildBatchesAtOnce.Store(atOnce)
			var c Counters
			cfg := testConfig(t, src, t.TempDir(), &c)
			cfg.BuildBatch = batch
			p, idx, release := readyProject(t, cfg, n)
			search := func(text string) *bleve.SearchResult { return searchContent(t, idx, text, n+1) }
			for i := range n {
				if res := search(word(i)); res.Total != 1 || res.Hits[0].ID != fmt.Sprintf("e%03d", i) {
					t.Fatalf("%s finds %d documents (%v), want e%03d alone", word(i), res.Total, res.Hits, i)
				}
			}
			if res := search("common"); res.Total != n {
				t.Fatalf("a word of every entry finds %d documents, want %d", res.Total, n)
			}
			release()
			reopenFromDisk(t, p, cfg, &c, n)
		})
	}
}

// uniqueWord is the i-th (i < 361) of words no other word of the tests'
// entries stems to: consonants only, so no stemmer takes a suffix off.
func uniqueWord(i int) string {
	const letters = "bcdfghjklmnpqrtvwxz"
	return "zq" + string(letters[i/len(letters)]) + string(letters[i%len(letters)])
}

// searchContent is idx's first size hits for text in the content field.
func searchContent(t *testing.T, idx bleve.Index, text string, size int) *bleve.SearchResult {
	t.Helper()
	q := bleve.NewMatchQuery(text)
	q.SetField("content")
	res, err := idx.Search(bleve.NewSearchRequestOptions(q, size, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readyProject is a new project of cfg, built, holding n documents, with
// its index ready (release it when done).
func readyProject(t *testing.T, cfg Config, n uint64) (*Project, bleve.Index, func()) {
	t.Helper()
	p := New(cfg)
	if got := docs(t, p); got != n {
		t.Fatalf("%d docs, want %d", got, n)
	}
	idx, release, err := p.Ready(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p, idx, release
}

// reopenFromDisk closes p and checks that the next project of cfg opens
// its n documents from disk: still one build in c, and one open.
func reopenFromDisk(t *testing.T, p *Project, cfg Config, c *Counters, n uint64) {
	t.Helper()
	p.Close()
	p = New(cfg)
	defer p.Close()
	if got := docs(t, p); got != n || c.Builds.Load() != 1 || c.Opened.Load() != 1 {
		t.Fatalf("reopened: %d docs, %d builds, %d opened; want %d, 1, 1", got, c.Builds.Load(), c.Opened.Load(), n)
	}
}
