package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"munin/internal/config"
)

// TestAllowedOriginsAreNormalizedForEveryLayer: --allowed-origins as people
// type it (trailing slash, spaces after commas, capitals) is accepted, and
// the web UI trusts the same origin the front door lets in. Before, such
// values stopped the server from starting, or the web UI compared them
// verbatim and refused the browser's lower-case Origin.
func TestAllowedOriginsAreNormalizedForEveryLayer(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := Open(Config{Config: config.Config{Server: config.Server{Addr: "127.0.0.1:8080", AllowedOrigins: []string{"https://App.Example/", " https://other.example", ""}}, Storage: config.Storage{DataDir: t.TempDir()}}, Logger: quiet})
	if err != nil {
		t.Fatalf("Open with origins as typed: %v", err)
	}
	defer a.Close()
	h := a.Handler()
	post := func(origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"key": {"munin_wrong"}}.Encode()))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, origin := range []string{"https://app.example", "https://other.example"} {
		if rec := post(origin); rec.Code == http.StatusForbidden {
			t.Errorf("sign-in form posted from allowed %s: 403 %s", origin, rec.Body)
		}
	}
	if rec := post("https://evil.example"); rec.Code != http.StatusForbidden {
		t.Errorf("sign-in form posted from a foreign origin: %d, want 403", rec.Code)
	}

	for _, bad := range []string{"ftp://app.example", "https://app.example/path", "app.example"} {
		if _, err := Open(Config{Config: config.Config{Server: config.Server{AllowedOrigins: []string{bad}}, Storage: config.Storage{DataDir: t.TempDir()}}, Logger: quiet}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Open with origin %q: %v, want an error naming it", bad, err)
		}
	}
}

// TestTrustedProxiesChecked: a --trusted-proxies value that is neither an
// address nor a prefix stops Open with an error naming it.
func TestTrustedProxiesChecked(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, bad := range []string{"localhost", "10.0.0.0/40"} {
		if _, err := Open(Config{Config: config.Config{Server: config.Server{TrustedProxies: []string{"127.0.0.1", bad}}, Storage: config.Storage{DataDir: t.TempDir()}}, Logger: quiet}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Open with trusted proxy %q: %v, want an error naming it", bad, err)
		}
	}
}
