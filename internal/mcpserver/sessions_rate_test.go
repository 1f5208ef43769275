package mcpserver

import (
	"net/http"
	"strings"
	"testing"
)

// TestProjectSessionOpenRate: all keys of a project together open at most
// SessionOpenRate sessions per second, bursts of SessionOpenBurstSeconds
// times it; past that initialize gets 429 with Retry-After naming the
// project, sessions already open go on, and another project opens its own.
func TestProjectSessionOpenRate(t *testing.T) {
	const rate = 0.4 // a burst of 2, the next a 2.5 s later
	h := newSessHarness(t, Options{SessionOpenRate: rate})
	toks := h.projectKeys(t, "p", 3)
	first := h.open(t, toks[0])
	h.open(t, toks[1])
	a := h.send(t, http.MethodPost, toks[2], "", initBody)
	if a.code != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" ||
		!strings.Contains(a.body, "opens more than 0.4 MCP sessions per second") {
		t.Fatalf("third session of the project in its burst of 2: %d (Retry-After %q) %s, want 429 naming the project's rate",
			a.code, a.header.Get("Retry-After"), a.body)
	}
	if a := h.send(t, http.MethodPost, toks[0], first, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); a.code != http.StatusOK {
		t.Fatalf("a call on an open session while the project may open none: %d %s", a.code, a.body)
	}
	h.open(t, h.projectKeys(t, "q", 1)[0])
}
