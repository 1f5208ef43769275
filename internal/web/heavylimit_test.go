package web

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestHeavyPagesOverTheLimit: while the key's place for heavy work is taken
// (one at a time here), an entry's render, a diff and a search answer 429
// with a Retry-After and say why; a cached render is still served; after
// the release the pages work.
func TestHeavyPagesOverTheLimit(t *testing.T) {
	u := newUIOn(t, servicetest.New(t, service.Options{RecallRate: -1, RecallConcurrency: 1}))
	u.remember(t, u.writerKey, "a", "first")
	u.remember(t, u.writerKey, "a", "second")
	b := u.signIn(t, u.reader)
	if code, _ := b.get(projPath + "/e/a?version=1"); code != http.StatusOK {
		t.Fatalf("warm the cache: %d", code)
	}
	release, err := u.env.Svc.HeavyWork(t.Context(), memory.NewCaller(u.readKey), ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{projPath + "/e/a", projPath + "/e/a?diff=1..2", projPath + "?q=first", "/search?q=first"} {
		resp, body := b.do("GET", path, nil)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || !strings.Contains(errorText(body), "at once") {
			t.Errorf("GET %s while busy: %d, Retry-After %q, %q; want 429 with Retry-After", path, resp.StatusCode, resp.Header.Get("Retry-After"), errorText(body))
		}
	}
	if code, _ := b.get(projPath + "/e/a?version=1"); code != http.StatusOK {
		t.Errorf("cached render while busy: %d, want 200", code)
	}
	release()
	for _, path := range []string{projPath + "/e/a", projPath + "/e/a?diff=1..2", projPath + "?q=first"} {
		if code, body := b.get(path); code != http.StatusOK {
			t.Errorf("GET %s after release: %d %s", path, code, errorText(body))
		}
	}
}
