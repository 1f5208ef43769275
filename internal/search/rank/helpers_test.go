package rank

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
