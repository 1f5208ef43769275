package rank

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/memory"
	"munin/internal/search/index"
	"munin/internal/search/searchtest"
)

var projA = memory.ProjectRef{Workspace: "ws", Project: "alpha"}

// testCtx bounds a test step, so a deadlock fails the test instead of hanging it.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newProject is ref's index in a temporary directory, built from src on
// its first use, as the search registry makes it.
func newProject(t testing.TB, src *searchtest.Source, ref memory.ProjectRef) *index.Project {
	t.Helper()
	m, err := index.NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	p := index.New(index.Config{Ref: ref, Path: filepath.Join(t.TempDir(), "idx"), Source: src, Mapping: m})
	t.Cleanup(p.Close)
	return p
}

// churnedIndex replaces or forgets rounds random entries of slug(), one
// refresh each — every refresh a segment of its own, the old versions
// deletions — and returns the project's index, released when the test ends
// (before the index closes, which waits for it).
func churnedIndex(t *testing.T, p *index.Project, src *searchtest.Source, rng *rand.Rand, rounds int,
	slug func() string, entry func(int) (slug, title, content string, tags []string)) bleve.Index {
	t.Helper()
	for range rounds {
		s := slug()
		if rng.IntN(3) == 0 {
			src.Forget(projA, s)
		} else {
			_, title, content, tags := entry(0)
			src.Put(projA, s, title, content, tags...)
		}
		if err := p.Refresh(testCtx(t), s); err != nil {
			t.Fatal(err)
		}
	}
	idx, release, err := p.Ready(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return idx
}

// snapshotOf is idx's current scorch snapshot, closed when the test ends.
func snapshotOf(t testing.TB, idx bleve.Index) *scorch.IndexSnapshot {
	t.Helper()
	adv, err := idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd.(*scorch.IndexSnapshot)
}
