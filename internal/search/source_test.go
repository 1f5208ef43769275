package search

import (
	"context"
	"fmt"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

// fakeSource simulates the database (searchtest.Source): versions per slug
// per project, with hooks that let a test delay or alter reads at the moment
// they happen.
type fakeSource = searchtest.Source

func newFakeSource() *fakeSource { return searchtest.NewSource() }

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
