package rank

import (
	"testing"

	"munin/internal/search/text"
)

// TestSlugAndTagsShareOneField (the cost half; package search checks the
// ranking): each query term costs three term searches (title, tags and
// slug, content), not one per field of the entry.
func TestSlugAndTagsShareOneField(t *testing.T) {
	if n := len(leavesOf(text.Analyze("zeppelin"))); n != 3 {
		t.Errorf("one query term makes %d term searches, want 3", n)
	}
}
