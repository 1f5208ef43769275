package remote_test

import (
	"context"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
)

// Index.Similar crosses the hop: the owner's store and index answer, for a
// new slug with the entry its text restates, for an existing slug with
// nothing, and the call is routed (and claims the workspace) like any other.
func TestSimilarIsAskedOfTheOwner(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	ctx := context.Background()
	if _, err := st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	const content = "Every night at 02:00 UTC a cron job on munin-01 copies all workspace files to the NAS " +
		"and verifies the checksum of each copy."
	if _, err := st.Append(ctx, ref, memory.Write{Slug: "runbooks/backup", Title: "Nightly backup", Content: content, Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	r := router(url, &routes)
	got, err := r.Similar(ctx, ref, "notes/backup", "Backups\n"+content)
	if err != nil || len(got) != 1 || got[0].Slug != "runbooks/backup" || got[0].Title != "Nightly backup" {
		t.Fatalf("Similar of a new slug: %+v, %v; want runbooks/backup", got, err)
	}
	if got, err := r.Similar(ctx, ref, "runbooks/backup", "Backups\n"+content); err != nil || len(got) != 0 {
		t.Fatalf("Similar of an existing slug: %+v, %v; want nothing", got, err)
	}
	if routes.Load() != 2 {
		t.Errorf("%d route lookups, want one per call", routes.Load())
	}
}
