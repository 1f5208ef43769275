package store

import (
	"context"
	"testing"

	"munin/internal/memory"
)

// The entry list names each entry's last writer, and with Forgotten lists
// the forgotten entries with the title and tags they had before the forget.
func TestListEntriesForgottenAndAgent(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	ctx := context.Background()
	put(t, s, ref, "kept", "stays", "a")
	put(t, s, ref, "gone", "goes", "a", "b")
	put(t, s, ref, "other", "goes too", "c")
	for _, slug := range []string{"gone", "other"} {
		if _, err := s.Append(ctx, ref, memory.Write{Slug: slug, Deleted: true, Agent: "forgetter"}); err != nil {
			t.Fatal(err)
		}
	}

	live, total, err := s.ListEntries(ctx, ref, memory.EntryFilter{})
	if err != nil || total != 1 || len(live) != 1 || live[0].Slug != "kept" || live[0].Agent != "tester" {
		t.Fatalf("live = %+v, %d, %v; want kept by tester", live, total, err)
	}
	gone, total, err := s.ListEntries(ctx, ref, memory.EntryFilter{Forgotten: true, Order: memory.OrderSlug})
	if err != nil || total != 2 || len(gone) != 2 {
		t.Fatalf("forgotten = %+v, %d, %v; want 2", gone, total, err)
	}
	g := gone[0]
	if g.Slug != "gone" || g.Title != "t gone" || g.Version != 2 || g.Agent != "forgetter" || len(g.Tags) != 2 {
		t.Fatalf("forgotten[0] = %+v; want gone, its old title and tags, version 2, by forgetter", g)
	}
	tagged, total, err := s.ListEntries(ctx, ref, memory.EntryFilter{Forgotten: true, Tag: "c"})
	if err != nil || total != 1 || len(tagged) != 1 || tagged[0].Slug != "other" {
		t.Fatalf("forgotten tagged c = %+v, %d, %v; want other", tagged, total, err)
	}
}
