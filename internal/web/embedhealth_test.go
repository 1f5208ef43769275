package web

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"munin/internal/service"
	"munin/internal/servicetest"
)

var embedFailingRe = regexp.MustCompile(`(?s)<p class="notice" id="embed-failing"[^>]*>(.*?)</p>`)

// The project page says that meaning search is paused, and why, while the
// embedding endpoint fails — to a read key too (the reason is a fixed
// sentence: no URL, answer or key) — and nothing while it answers.
func TestProjectPageShowsEmbedFailure(t *testing.T) {
	var reason atomic.Pointer[string] // nil or "": the endpoint answers
	health := func() (bool, string) {
		if r := reason.Load(); r != nil && *r != "" {
			return true, *r
		}
		return false, ""
	}
	u := newUIOn(t, servicetest.New(t, service.Options{EmbedHealth: health}))
	b := u.signIn(t, u.reader)
	notice := func(path string) string {
		t.Helper()
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, code)
		}
		if m := embedFailingRe.FindStringSubmatch(body); m != nil {
			return html.UnescapeString(strings.Join(strings.Fields(m[1]), " "))
		}
		return ""
	}

	if got := notice(projPath); got != "" {
		t.Fatalf("a notice while the endpoint answers: %q", got)
	}
	const why = "the embedding endpoint refuses Munin's key"
	failing := why
	reason.Store(&failing)
	for _, path := range []string{projPath, projPath + "?q=backups"} {
		if got := notice(path); !strings.HasPrefix(got, "Meaning search paused: "+why+".") {
			t.Errorf("GET %s while the endpoint fails: notice %q, want it to begin %q", path, got, "Meaning search paused: "+why+".")
		}
	}
	reason.Store(nil)
	if got := notice(projPath); got != "" {
		t.Fatalf("a notice after the endpoint answers again: %q", got)
	}
}
