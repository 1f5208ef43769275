package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"munin/internal/config"
)

// TestWebSessionCountsAgainstItsKeysLimits: a key signed in to the web UI is
// held to the same limits per key as over REST and MCP — its session's
// requests count against the key's rate — so the web UI is no way around
// them.
func TestWebSessionCountsAgainstItsKeysLimits(t *testing.T) {
	// One request per 100 s, burst 1: the second request of the key is over.
	_, base, token := serveWith(t, Config{Config: config.Config{Limits: config.Limits{RatePerKey: 0.01}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"key": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(jar.Cookies(resp.Request.URL)) == 0 {
		t.Fatalf("sign-in: %d, cookies %v", resp.StatusCode, jar.Cookies(resp.Request.URL))
	}
	get := func() (int, string) {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if st, _ := get(); st != http.StatusOK {
		t.Fatalf("first page of the session: %d", st)
	}
	if st, retry := get(); st != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("a page past the key's rate: %d, Retry-After %q; want 429 as over REST", st, retry)
	}
}
