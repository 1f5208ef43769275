package search

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
)

// TestStaleHitsAreBoundedDeepPasses: when every match is stale, a recall
// reaches deeper only up to StaleDepth candidates (passes of limit, 4×, 16×
// … capped), answers no hit, and with IncludeStale the stale ones, marked.
// Search, the index's own view, keeps them in place, marked.
func TestStaleHitsAreBoundedDeepPasses(t *testing.T) {
	src := newFakeSource()
	for i := range 500 {
		src.Put(projA, fmt.Sprintf("stale/%03d", i), "heron", "heron nesting notes")
	}
	var reads atomic.Int64
	src.SetHooks(nil, func(_ memory.ProjectRef, slug string, v memory.Version, err error) (memory.Version, error) {
		reads.Add(1)
		if strings.HasPrefix(slug, "stale/") {
			v.SupersededBy = "newer"
		}
		return v, err
	})
	r := newTestRegistry(t, src, Options{})
	ctx := testCtx(t)

	hits, err := r.SearchProjects(ctx, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "heron", Limit: 10})
	if err != nil || len(hits) != 0 {
		t.Fatalf("all stale: %d hits, %v; want none", len(hits), err)
	}
	if n, most := reads.Load(), int64(10+40+160+StaleDepth); n > most {
		t.Fatalf("read %d hits for one recall, want at most %d (passes of 10, 40, 160, %d)", n, most, StaleDepth)
	}

	hits, err = r.SearchProjects(ctx, []memory.ProjectRef{projA}, memory.SearchQuery{Text: "heron", Limit: 10, IncludeStale: true})
	if err != nil || len(hits) != 10 {
		t.Fatalf("IncludeStale: %d hits, %v; want 10", len(hits), err)
	}
	for _, h := range hits {
		if h.State != memory.StateSuperseded {
			t.Fatalf("IncludeStale: %s has state %q, want superseded", h.Slug, h.State)
		}
	}
	hits, err = r.Search(ctx, projA, memory.SearchQuery{Text: "heron", Limit: 5})
	if err != nil || len(hits) != 5 || hits[0].State != memory.StateSuperseded {
		t.Fatalf("Search: %+v, %v; want 5 hits marked superseded", hits, err)
	}
}
