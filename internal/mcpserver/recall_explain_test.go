package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestRecallExplainsOverMCP: in both protocol eras, a recall hit found by a
// typo's correction carries its explanation in the structured result
// (validated against the tool's output schema) and says it in the text; a
// hit on the words as written carries none, and its structured hit leaves
// the field out.
func TestRecallExplainsOverMCP(t *testing.T) {
	h := newHarness(t, service.Options{})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleWrite)
	callOK[service.WriteResult](t, h.client(t, token), "remember", map[string]any{
		"slug": "notes/db", "content": "Wir nutzen eine **Datenbank** für alle Projekte.",
	})
	for _, era := range eras {
		c := connectEra(t, h.url, token, era)
		res, text := callOK[service.RecallResult](t, c, "recall", map[string]any{"query": "Datenbnak"})
		const want = "matched 'Datenbank' for 'Datenbnak'"
		if len(res.Hits) != 1 || res.Hits[0].Explanation != want || res.Hits[0].Snippet != "Wir nutzen eine «Datenbank» für alle Projekte." {
			t.Errorf("%s: hits %+v, want notes/db explained %q", era, res.Hits, want)
		}
		if !strings.Contains(text, " · "+want+"\n") {
			t.Errorf("%s: text %q does not explain the hit", era, text)
		}
		raw := call(t, c, "recall", map[string]any{"query": "Datenbank"})
		hits, _ := raw.StructuredContent.(map[string]any)["hits"].([]any)
		if len(hits) != 1 {
			t.Fatalf("%s: Datenbank: %v", era, raw.StructuredContent)
		}
		if _, ok := hits[0].(map[string]any)["explanation"]; ok || strings.Contains(resultText(t, raw), "matched") {
			t.Errorf("%s: a hit on the words as written is explained: %v", era, raw.StructuredContent)
		}
	}
}

// TestRecallTextExplains: the text answer appends a hit's explanation, and
// does not say "by meaning" twice.
func TestRecallTextExplains(t *testing.T) {
	hits := []service.Hit{
		{Project: "ws/p", Slug: "a", Version: 1, Title: "A", Match: memory.MatchWords, Explanation: "parts of 'Fehlerbericht': Fehler, Bericht"},
		{Project: "ws/p", Slug: "b", Version: 2, Title: "B", Match: memory.MatchBoth, Explanation: "matched 'Datenbank' for 'Datenbnak'"},
		{Project: "ws/p", Slug: "c", Version: 3, Title: "C", Match: memory.MatchMeaning, Explanation: "by meaning"},
		{Project: "ws/p", Slug: "d", Version: 4, Title: "D", Match: memory.MatchWords},
	}
	var heads []string
	for _, line := range strings.Split(recallText("q", hits), "\n")[1:] {
		if !strings.HasPrefix(line, "   ") {
			heads = append(heads, line)
		}
	}
	want := []string{
		"1. a v1 (ws/p) — A · parts of 'Fehlerbericht': Fehler, Bericht",
		"2. b v2 (ws/p) — B · found by words and meaning · matched 'Datenbank' for 'Datenbnak'",
		"3. c v3 (ws/p) — C · found by meaning",
		"4. d v4 (ws/p) — D",
	}
	if !slices.Equal(heads, want) {
		t.Errorf("hit lines %q, want %q", heads, want)
	}
}
