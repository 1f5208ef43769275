package app

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"munin/internal/service"
)

// TestChangeStreamsFollowTheServerLimits: the REST change stream runs with
// the server's --max-streams-per-key (one here): a key's second stream is
// refused with 429 while its first is open, and the open one hears a write.
func TestChangeStreamsFollowTheServerLimits(t *testing.T) {
	var cfg Config
	cfg.Logger = quietLog()
	cfg.Limits.MaxStreamsPerKey = 1
	a, base, token := serveWith(t, cfg)
	open := func() *http.Response {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/changes/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	first := open()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", first.StatusCode)
	}
	if second := open(); second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second stream of the key with --max-streams-per-key=1: %d, want 429", second.StatusCode)
	}
	if _, err := a.Svc.Remember(context.Background(), mustKey(t, a, token), service.RememberRequest{Slug: "notes/live", Content: "heard live"}); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(first.Body)
	for range 50 {
		if !lines.Scan() {
			t.Fatalf("stream ended before the write: %v", lines.Err())
		}
		if strings.HasPrefix(lines.Text(), "data:") {
			if !strings.Contains(lines.Text(), `"slug":"notes/live"`) {
				t.Fatalf("first change: %s", lines.Text())
			}
			return
		}
	}
	t.Fatal("no change event within 50 lines")
}
