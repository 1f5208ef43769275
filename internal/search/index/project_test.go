package index

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

var ref = memory.ProjectRef{Workspace: "ws", Project: "p"}

// newSource holds five entries of ref.
func newSource() *searchtest.Source {
	src := searchtest.NewSource()
	for i := range 5 {
		src.Put(ref, fmt.Sprintf("e%d", i), "T", "alpha")
	}
	return src
}

func testConfig(t *testing.T, src Source, dir string, c *Counters) Config {
	m, err := NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	// A short nap: closing waits until the index is on disk, up to a nap.
	return Config{Ref: ref, Path: dir, Source: src, Mapping: m, Persist: true, Counters: c, PersistNap: time.Millisecond}
}

// scorchOf is idx's scorch index.
func scorchOf(tb testing.TB, idx bleve.Index) *scorch.Scorch {
	tb.Helper()
	adv, err := idx.Advanced()
	if err != nil {
		tb.Fatal(err)
	}
	return adv.(*scorch.Scorch)
}

// docs waits for the index (Ready) and counts its documents.
func docs(t *testing.T, p *Project) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idx, release, err := p.Ready(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	n, err := idx.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBuildRefreshReopen: the first use builds the index from the Source; a
// queued write is applied before the next search; a forget removes the
// document; an index closed and opened again is caught up from its mark
// with the writes made while it was closed, not rebuilt.
func TestBuildRefreshReopen(t *testing.T) {
	src := newSource()
	dir := t.TempDir()
	var c Counters
	p := New(testConfig(t, src, dir, &c))
	if n := docs(t, p); n != 5 || c.Builds.Load() != 1 {
		t.Fatalf("after the build: %d docs, %d builds; want 5, 1", n, c.Builds.Load())
	}
	src.Put(ref, "e5", "T", "beta")
	p.Queue("e5")
	src.Forget(ref, "e0")
	p.Queue("e0")
	if n := docs(t, p); n != 5 {
		t.Fatalf("after a write and a forget: %d docs, want 5", n)
	}
	p.Close()

	src.Put(ref, "e6", "T", "gamma") // while closed
	p = New(testConfig(t, src, dir, &c))
	defer p.Close()
	if n := docs(t, p); n != 6 || c.Builds.Load() != 1 || c.Opened.Load() != 1 {
		t.Fatalf("reopened: %d docs, %d builds, %d opened; want 6, 1, 1", n, c.Builds.Load(), c.Opened.Load())
	}
	if n, err := p.Rebuild(); err != nil || n != 6 || c.Builds.Load() != 2 {
		t.Fatalf("rebuild: %d docs, %v, %d builds; want 6, nil, 2", n, err, c.Builds.Load())
	}
}

// TestMarkEncoding: a mark survives its 16 bytes; anything else is no mark.
func TestMarkEncoding(t *testing.T) {
	m := memory.Mark{Seq: 1<<40 + 7, Stamp: -3}
	if got, ok := decodeMark(encodeMark(m)); !ok || got != m {
		t.Fatalf("decode(encode(%v)) = %v, %v", m, got, ok)
	}
	if _, ok := decodeMark(encodeMark(m)[:15]); ok {
		t.Fatal("15 bytes decoded as a mark")
	}
}
