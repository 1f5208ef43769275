package remote

import (
	"slices"
	"testing"

	"munin/internal/memory"
)

// TestMergeHitsPutsStaleLast: hits of several owners come live first, then
// stale (include_stale), each by score, cut to the limit — a stale hit with
// a higher score never passes a live one.
func TestMergeHitsPutsStaleLast(t *testing.T) {
	hits := []memory.Hit{
		{Slug: "a", Score: 3, State: memory.StateSuperseded},
		{Slug: "b", Score: 1},
		{Slug: "c", Score: 2, State: memory.StateExpired},
		{Slug: "d", Score: 2},
	}
	var got []string
	for _, h := range mergeHits(hits, 3) {
		got = append(got, h.Slug)
	}
	if want := []string{"d", "b", "a"}; !slices.Equal(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
}
