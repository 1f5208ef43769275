package web

import (
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestKeyFormOverTheHourlyLimit: past a project's key creations per hour the
// keys form answers 429 with Retry-After and the reason on the page, and
// creates nothing.
func TestKeyFormOverTheHourlyLimit(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.admin)
	form := func() url.Values {
		return url.Values{"workspace": {ws}, "project": {proj}, "agent": {"churn"}, "role": {"read"}, "csrf": {b.csrf}}
	}
	// newUI made three keys of ws/proj; they count.
	for i := 3; i < memory.KeyCreationsPerHour; i++ {
		if code, body := b.post("/keys", form()); code != http.StatusOK || !regexpToken.MatchString(body) {
			t.Fatalf("key %d: %d %s", i+1, code, errorText(body))
		}
	}
	resp, body := b.do("POST", "/keys", form())
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 3600 {
		t.Fatalf("key %d: %d, Retry-After %q; want 429 with a retry within the hour", memory.KeyCreationsPerHour+1, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(html.UnescapeString(body), "project ws/proj created its 100 keys in the last hour") ||
		!strings.Contains(body, `id="create-key"`) || regexpToken.MatchString(body) {
		t.Fatalf("the refused form does not say why, or shows a token:\n%s", body)
	}
	keys, err := u.env.Store.ListProjectKeys(t.Context(), ref)
	if err != nil || len(keys) != memory.KeyCreationsPerHour {
		t.Fatalf("%d keys, %v; want %d", len(keys), err, memory.KeyCreationsPerHour)
	}
}
