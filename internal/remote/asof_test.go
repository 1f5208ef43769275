package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestAsOfAndStaleHitsCrossTheHop: the as-of reads go to the workspace's
// owner, and a recall over the hop leaves out a superseded entry, or with
// IncludeStale lists it marked.
func TestAsOfAndStaleHitsCrossTheHop(t *testing.T) {
	ctx := context.Background()
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	r := router(url, &routes)
	first, err := r.Append(ctx, ref, memory.Write{Slug: "a", Title: "t", Content: "wombat burrow map", Agent: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, ref, memory.Write{Slug: "b", Title: "t", Content: "wombat burrow map, redrawn", Agent: "w", Supersedes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}

	v, latest, err := r.GetAsOf(ctx, ref, "a", 0, first.CreatedAt)
	if err != nil || v.Version != 1 || latest != 1 || v.SupersededBy != "" {
		t.Fatalf("GetAsOf over the hop: %+v %d %v", v, latest, err)
	}
	if v, _, err := r.Get(ctx, ref, "a", 0); err != nil || v.SupersededBy != "b" {
		t.Fatalf("Get over the hop: superseded_by %q, %v", v.SupersededBy, err)
	}
	es, _, err := r.ListAsOf(ctx, ref, memory.ListQuery{}, first.CreatedAt)
	if err != nil || len(es) != 1 || es[0].Slug != "a" {
		t.Fatalf("ListAsOf over the hop: %+v %v", es, err)
	}
	if _, err := r.HistoryAsOf(ctx, ref, "b", 0, first.CreatedAt); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("HistoryAsOf of b before it was written: %v, want not_found", err)
	}

	q := memory.SearchQuery{Text: "wombat burrow", At: time.Now()}
	hits, err := r.SearchProjects(ctx, []memory.ProjectRef{ref}, q)
	if err != nil || len(hits) != 1 || hits[0].Slug != "b" {
		t.Fatalf("recall over the hop: %+v %v, want b alone", hits, err)
	}
	q.IncludeStale = true
	hits, err = r.SearchProjects(ctx, []memory.ProjectRef{ref}, q)
	if err != nil || len(hits) != 2 || hits[1].Slug != "a" || hits[1].State != memory.StateSuperseded || hits[1].Project != ref {
		t.Fatalf("recall over the hop with IncludeStale: %+v %v, want a second, marked superseded", hits, err)
	}
}
