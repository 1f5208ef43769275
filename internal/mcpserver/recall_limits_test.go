package mcpserver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestRecallLimitsOverMCP: the recall tool reports the term cap as invalid
// and the rate limit as budget_exhausted, as tool errors naming the numbers.
func TestRecallLimitsOverMCP(t *testing.T) {
	now := time.Now()
	h := newHarness(t, service.Options{RecallRate: 0.1, RecallBurst: 3, Now: func() time.Time { return now }})
	token, _ := h.env.Key(t, "ws", "proj", "alice", memory.RoleRead)
	c := h.client(t, token)
	var words []string
	for i := range 33 {
		words = append(words, fmt.Sprintf("qz%c%c", 'b'+i/10, 'b'+i%10))
	}
	if text := callErr(t, c, "recall", map[string]any{"query": strings.Join(words, " ")}); text != "invalid: query has 33 distinct search terms; at most 32 are allowed" {
		t.Fatalf("33 terms: %q", text)
	}
	for range 2 {
		callOK[map[string]any](t, c, "recall", map[string]any{"query": "x"})
	}
	text := callErr(t, c, "recall", map[string]any{"query": "x"})
	if !strings.HasPrefix(text, "budget_exhausted: key ") || !strings.HasSuffix(text, "(alice) may recall 0.1 times per second; retry in 10 s") {
		t.Fatalf("over the rate: %q", text)
	}
}
