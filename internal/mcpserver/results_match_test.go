package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestRecallTextSaysMatch: the text answer says which hits were found by
// meaning (their snippet may hold none of the query's words), and says
// nothing extra for hits found by their words, the only kind with meaning
// search off.
func TestRecallTextSaysMatch(t *testing.T) {
	hits := []service.Hit{
		{Project: "ws/p", Slug: "a", Version: 1, Title: "A", Match: memory.MatchBoth},
		{Project: "ws/p", Slug: "b", Version: 2, Title: "B", Match: memory.MatchWords},
		{Project: "ws/p", Slug: "c", Version: 3, Title: "C", Match: memory.MatchMeaning},
	}
	var heads []string
	for _, line := range strings.Split(recallText("keep data safe", hits), "\n")[1:] {
		if !strings.HasPrefix(line, "   ") { // snippet lines are indented
			heads = append(heads, line)
		}
	}
	want := []string{
		"1. a v1 (ws/p) — A · found by words and meaning",
		"2. b v2 (ws/p) — B",
		"3. c v3 (ws/p) — C · found by meaning",
	}
	if !slices.Equal(heads, want) {
		t.Errorf("hit lines %q, want %q", heads, want)
	}
}
