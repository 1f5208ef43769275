package search

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// fakeSource simulates the database: versions per slug per project, with
// hooks that let a test delay or alter reads at the moment they happen.
type fakeSource struct {
	mu   sync.Mutex
	data map[memory.ProjectRef]map[string][]memory.Version
	// seq is the change sequence (one for all projects, like a workspace's)
	// and changed the sequence of each slug's last write.
	seq     int64
	changed map[memory.ProjectRef]map[string]int64
	// history tells this fake's changes from another fake's with the same
	// sequence numbers (a restored older copy of a database).
	history int64
	// scanHook runs after ScanLatest took its snapshot and before it emits
	// it, like a long read transaction; it may block.
	scanHook func(ctx context.Context, ref memory.ProjectRef) error
	// latestHook runs after Latest read its result and may block or replace it.
	latestHook func(ref memory.ProjectRef, slug string, v memory.Version, err error) (memory.Version, error)
}

func newFakeSource() *fakeSource {
	return &fakeSource{data: make(map[memory.ProjectRef]map[string][]memory.Version), changed: make(map[memory.ProjectRef]map[string]int64)}
}

// put appends the next version of slug and returns it.
func (s *fakeSource) put(ref memory.ProjectRef, slug, title, content string, tags ...string) memory.Version {
	return s.append(ref, memory.Version{Slug: slug, Title: title, Content: content, Tags: tags})
}

// forget appends a tombstone.
func (s *fakeSource) forget(ref memory.ProjectRef, slug string) memory.Version {
	return s.append(ref, memory.Version{Slug: slug, Deleted: true})
}

func (s *fakeSource) append(ref memory.ProjectRef, v memory.Version) memory.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.data[ref]
	if p == nil {
		p = make(map[string][]memory.Version)
		s.data[ref] = p
	}
	v.Version = len(p[v.Slug]) + 1
	v.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, v.Version*1000, time.UTC)
	v.Agent = "test"
	p[v.Slug] = append(p[v.Slug], v)
	s.seq++
	if s.changed[ref] == nil {
		s.changed[ref] = make(map[string]int64)
	}
	s.changed[ref][v.Slug] = s.seq
	return v
}

// touch marks slug changed in every project holding it without a new
// version, as a write the index must read again: the next refresh batch
// reads it (through latestHook).
func (s *fakeSource) touch(slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref, slugs := range s.data {
		if _, ok := slugs[slug]; ok {
			s.seq++
			s.changed[ref][slug] = s.seq
		}
	}
}

// version returns one stored version (1-based).
func (s *fakeSource) version(ref memory.ProjectRef, slug string, n int) memory.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[ref][slug][n-1]
}

func (s *fakeSource) setHooks(scan func(context.Context, memory.ProjectRef) error,
	latest func(memory.ProjectRef, string, memory.Version, error) (memory.Version, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanHook, s.latestHook = scan, latest
}

func (s *fakeSource) Latest(ctx context.Context, ref memory.ProjectRef, slug string) (memory.Version, error) {
	s.mu.Lock()
	vs := s.data[ref][slug]
	hook := s.latestHook
	var v memory.Version
	var err error
	if len(vs) == 0 {
		err = memory.Errorf(memory.CodeNotFound, "entry %q not found", slug)
	} else {
		v = vs[len(vs)-1]
	}
	s.mu.Unlock()
	if hook != nil {
		return hook(ref, slug, v, err)
	}
	return v, err
}

func (s *fakeSource) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.data[ref][slug]
	if version < 1 || version > len(vs) {
		return memory.Version{}, 0, memory.Errorf(memory.CodeNotFound, "version %d of %q not found", version, slug)
	}
	return vs[version-1], len(vs), nil
}

// mark names the fake's change seq; its stamp is derived from it and the
// fake's history.
func (s *fakeSource) mark(seq int64) memory.Mark {
	if seq == 0 {
		return memory.Mark{}
	}
	return memory.Mark{Seq: seq, Stamp: seq*1000 + s.history}
}

func (s *fakeSource) ScanLatestSeq(ctx context.Context, ref memory.ProjectRef, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	var live []memory.Version
	for _, vs := range s.data[ref] {
		if v := vs[len(vs)-1]; !v.Deleted {
			live = append(live, v)
		}
	}
	seq, hook := s.seq, s.scanHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, ref); err != nil {
			return memory.Mark{}, err
		}
	}
	for _, v := range live {
		if err := ctx.Err(); err != nil {
			return memory.Mark{}, err
		}
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return s.mark(seq), nil
}

// Changes hands each changed slug's latest version through latestHook, as
// Latest does: a test can slow down or alter the read of one slug.
func (s *fakeSource) Changes(ctx context.Context, ref memory.ProjectRef, since memory.Mark, fn func(memory.Version) error) (memory.Mark, error) {
	s.mu.Lock()
	if since.Seq > s.seq || since != s.mark(since.Seq) {
		s.mu.Unlock()
		return memory.Mark{}, memory.ErrUnknownMark
	}
	var latest []memory.Version
	for slug, at := range s.changed[ref] {
		if at > since.Seq {
			vs := s.data[ref][slug]
			latest = append(latest, vs[len(vs)-1])
		}
	}
	seq, hook := s.seq, s.latestHook
	s.mu.Unlock()
	for _, v := range latest {
		if hook != nil {
			var err error
			if v, err = hook(ref, v.Slug, v, nil); err != nil {
				return memory.Mark{}, err
			}
		}
		if err := fn(v); err != nil {
			return memory.Mark{}, err
		}
	}
	return s.mark(seq), nil
}

// Helpers shared by the tests.

var (
	projA = memory.ProjectRef{Workspace: "ws", Project: "alpha"}
	projB = memory.ProjectRef{Workspace: "ws", Project: "beta"}
)

func newTestRegistry(t testing.TB, src Source, opts Options) *Registry {
	t.Helper()
	r := NewRegistry(src, opts)
	t.Cleanup(func() { r.Close() })
	return r
}

// testCtx bounds a test step, so a deadlock fails the test instead of hanging it.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func find(t testing.TB, r *Registry, ref memory.ProjectRef, text string, tags ...string) []memory.Hit {
	t.Helper()
	hits, err := r.Search(testCtx(t), ref, memory.SearchQuery{Text: text, Tags: tags})
	if err != nil {
		t.Fatalf("search %q: %v", text, err)
	}
	return hits
}

func slugs(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Slug
	}
	return out
}

func refresh(t testing.TB, r *Registry, ref memory.ProjectRef, slug string) {
	t.Helper()
	if err := r.Refresh(testCtx(t), ref, slug); err != nil {
		t.Fatalf("refresh %s: %v", slug, err)
	}
}

// waitQueued waits until the project's collecting round holds n slugs, i.e.
// n refreshes are queued behind a build or batch.
func waitQueued(t testing.TB, r *Registry, ref memory.ProjectRef, n int) {
	t.Helper()
	p, err := r.project(ref)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := p.Queued()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refreshes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func word(i int) string { return fmt.Sprintf("unique%dword", i) }
