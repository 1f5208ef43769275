package index

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// memSource is a Source in memory: the latest version per slug and the
// change sequence of each.
type memSource struct {
	mu      sync.Mutex
	seq     int64
	latest  map[string]memory.Version
	changed map[string]int64
}

func newMemSource() *memSource {
	return &memSource{latest: map[string]memory.Version{}, changed: map[string]int64{}}
}

func (s *memSource) put(slug, content string, deleted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	v := s.latest[slug]
	s.latest[slug] = memory.Version{Slug: slug, Version: v.Version + 1, Title: "T", Content: content, Deleted: deleted}
	s.changed[slug] = s.seq
}

func (s *memSource) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	return s.since(0, false, fn)
}

func (s *memSource) Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	unknown := since.Seq > s.seq || since.Stamp != since.Seq
	s.mu.Unlock()
	if unknown {
		return memory.Mark{}, memory.ErrUnknownMark
	}
	return s.since(since.Seq, true, fn)
}

func (s *memSource) since(seq int64, tombstones bool, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	var vs []memory.Version
	for slug, at := range s.changed {
		if v := s.latest[slug]; at > seq && (tombstones || !v.Deleted) {
			vs = append(vs, v)
		}
	}
	mark := memory.Mark{Seq: s.seq, Stamp: s.seq}
	s.mu.Unlock()
	for _, v := range vs {
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return mark, nil
}

func testConfig(t *testing.T, src Source, dir string, c *Counters) Config {
	m, err := NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Ref: memory.ProjectRef{Workspace: "ws", Project: "p"}, Path: dir, Source: src, Mapping: m, Persist: true, Counters: c}
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
	src := newMemSource()
	for i := range 5 {
		src.put(fmt.Sprintf("e%d", i), "alpha", false)
	}
	dir := t.TempDir()
	var c Counters
	p := New(testConfig(t, src, dir, &c))
	if n := docs(t, p); n != 5 || c.Builds.Load() != 1 {
		t.Fatalf("after the build: %d docs, %d builds; want 5, 1", n, c.Builds.Load())
	}
	src.put("e5", "beta", false)
	p.Queue("e5")
	src.put("e0", "", true)
	p.Queue("e0")
	if n := docs(t, p); n != 5 {
		t.Fatalf("after a write and a forget: %d docs, want 5", n)
	}
	p.Close()

	src.put("e6", "gamma", false) // while closed
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
