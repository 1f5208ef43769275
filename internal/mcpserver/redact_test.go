package mcpserver

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestRedactSessionIDs: whatever way an id reaches the wrapped logger — as a
// session attribute, inside an error or the message, in a group or in
// WithAttrs — only its short prefix is written.
func TestRedactSessionIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(redactSessionIDs(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ours := sessionPrefix + "0123456789abcdef0123456789abcdef"
	invented := strings.Repeat("z", 200) // not shaped like ours, but named as a session
	log.Info("Sweeping expired session", "session", ours)
	log.Warn("failed to terminate session", "sessionID", invented, "err", fmt.Errorf("no active session found for session %s", ours))
	log.With("session", ours).Error("Failed to handle sampling response " + ours)
	log.Info("grouped", slog.Group("req", slog.String("Mcp-Session-Id", ours)))
	out := buf.String()
	if strings.Contains(out, ours) || strings.Contains(out, invented) || strings.Contains(out, "89abcdef0123") {
		t.Fatalf("a session id reached the log whole:\n%s", out)
	}
	if n := strings.Count(out, sessionPrefix+"01234567…"); n != 5 {
		t.Fatalf("want the short form 5 times, got %d:\n%s", n, out)
	}
}
