package web

import (
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestHostileDiffPageIsBounded: the diff of two 64 KiB versions with tens of
// thousands of changed lines (4–8 MB of HTML before) is a bounded page that
// says it shows only the first changes.
func TestHostileDiffPageIsBounded(t *testing.T) {
	u := newUI(t)
	v1, v2 := hostileDiff()
	u.remember(t, u.writerKey, "big", v1)
	u.remember(t, u.writerKey, "big", v2)
	b := u.signIn(t, u.reader)
	code, body := b.get(projPath + "/e/big?diff=1..2")
	if code != http.StatusOK || len(body) > 1<<20 {
		t.Fatalf("diff page: %d, %d bytes; want 200 and at most 1 MiB", code, len(body))
	}
	if !strings.Contains(body, `id="diff-cut"`) || !strings.Contains(body, "This diff is too large to show whole: showing the first") {
		t.Fatalf("the cut diff does not say so:\n%.2000s", body)
	}
}

// TestHostileQuotesPageIsBounded: an entry of 65,536 '>' (1.8 MB of nested
// blockquotes before, seconds of parsing) is shown as plain text, saying
// why.
func TestHostileQuotesPageIsBounded(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "quotes", hostileQuotes())
	b := u.signIn(t, u.reader)
	code, body := b.get(projPath + "/e/quotes")
	if code != http.StatusOK || len(body) > 6*memory.DefaultMaxContent+32<<10 {
		t.Fatalf("entry page: %d, %d bytes", code, len(body))
	}
	if !strings.Contains(body, `id="plain-text"`) || strings.Contains(body, "<blockquote>") {
		t.Fatalf("the entry is not shown as plain text with a note:\n%.2000s", body)
	}
}

// TestRendersAreCached: a version's render and a diff are computed once and
// then served from the cache; the same text in another project is rendered
// for that project (the cache does not cross projects), and a session
// without a key for the project gets its 404, not the cached render.
func TestRendersAreCached(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "# First\n\nsome *text*")
	u.remember(t, u.writerKey, "a", "# Second\n\nsome *text*")
	otherToken, other := u.newKey(t, ws, "other", "o", memory.RoleWrite)
	u.remember(t, other, "a", "# Second\n\nsome *text*")
	b := u.signIn(t, u.reader)
	misses := func() int { _, _, m := u.h.pages.cache.stats(); return m }
	for i, tc := range []struct {
		path    string
		renders int
	}{
		{projPath + "/e/a", 1},
		{projPath + "/e/a", 1},
		{projPath + "/e/a?version=2", 1}, // the same version
		{projPath + "/e/a?version=1", 2},
		{projPath + "/e/a?diff=1..2", 3},
		{projPath + "/e/a?from=1&to=2", 3},
		{projPath + "/e/a?diff=2..1", 4},
	} {
		if code, body := b.get(tc.path); code != http.StatusOK {
			t.Fatalf("step %d, GET %s: %d %s", i, tc.path, code, errorText(body))
		}
		if got := misses(); got != tc.renders {
			t.Fatalf("step %d, GET %s: %d renders so far, want %d", i, tc.path, got, tc.renders)
		}
	}
	ob := u.signIn(t, otherToken)
	if code, body := ob.get("/w/ws/p/other/e/a"); code != http.StatusOK || !strings.Contains(body, "<h1>Second</h1>") || misses() != 5 {
		t.Fatalf("same text in another project: %d, %d renders; want its own render", code, misses())
	}
	if code, body := ob.get(projPath + "/e/a"); code != http.StatusNotFound || strings.Contains(body, "Second") {
		t.Fatalf("a session without a key for %s: %d", projPath, code)
	}
}
