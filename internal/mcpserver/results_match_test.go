package mcpserver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
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

// TestTextSaysState: the text answers mark what is not a live entry — the
// caller's own pending proposal, an expired or superseded entry — and what
// get knows of an entry's validity, for clients that read only the text.
func TestTextSaysState(t *testing.T) {
	hits := []service.Hit{
		{Project: "ws/p", Slug: "a", Version: 1, Title: "A", Match: memory.MatchWords, State: memory.ProposalPending},
		{Project: "ws/p", Slug: "b", Version: 2, Title: "B", Match: memory.MatchWords, State: "expired"},
		{Project: "ws/p", Slug: "c", Version: 3, Title: "C", Match: memory.MatchWords},
	}
	lines := strings.Split(recallText("q", hits), "\n")
	for i, want := range map[int]string{
		1: "1. a v1 (ws/p) — A · pending review (your proposal)",
		3: "2. b v2 (ws/p) — B · expired",
		5: "3. c v3 (ws/p) — C",
	} {
		if lines[i] != want {
			t.Errorf("line %d %q, want %q", i, lines[i], want)
		}
	}

	until := servicetest.FutureHour()
	e := service.Entry{ValidUntil: &until, Expired: true, SupersededBy: "notes/new", Supersedes: []string{"notes/old"}}
	if got, want := validity(e), "\nvalid until "+until.Format(time.RFC3339)+" (expired)\nsuperseded by notes/new\nsupersedes notes/old"; got != want {
		t.Errorf("validity %q, want %q", got, want)
	}
	if got := validity(service.Entry{}); got != "" {
		t.Errorf("validity of a plain entry %q", got)
	}

	sim := similarText([]memory.Similar{{Slug: "notes/db", Title: "DB choice", Score: 0.8125}})
	if want := "\nsimilar entries exist — update one of them instead?\n- notes/db — DB choice (0.81)"; sim != want {
		t.Errorf("similar %q, want %q", sim, want)
	}
}
