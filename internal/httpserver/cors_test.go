package httpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCORS: a browser client on an allowed origin gets its preflight answered
// without a key and can read the answers; other origins get nothing, and the
// cookie-based web UI never answers cross-origin.
func TestCORS(t *testing.T) {
	s := newStack(t, Config{AllowedOrigins: []string{"https://app.example"}}, nil, nil)
	do := func(method, path, origin string, headers map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.Host = "127.0.0.1:8080"
		r.Header.Set("Origin", origin)
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(w, r)
		return w
	}
	preflight := map[string]string{
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, mcp-protocol-version",
	}

	for _, origin := range []string{"http://localhost:6274", "https://app.example"} {
		for _, path := range []string{"/mcp", "/api/v1/recall"} {
			w := do(http.MethodOptions, path, origin, preflight)
			if w.Code != http.StatusNoContent {
				t.Errorf("preflight %s from %s: status %d, want 204 (no key needed): %s", path, origin, w.Code, w.Body.String())
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("preflight %s from %s: Allow-Origin %q", path, origin, got)
			}
			allowed := strings.ToLower(w.Header().Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"authorization", "mcp-session-id", "mcp-protocol-version"} {
				if !strings.Contains(allowed, h) {
					t.Errorf("preflight %s from %s: Allow-Headers %q lacks %s", path, origin, allowed, h)
				}
			}
			if w.Header().Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("preflight %s: credentials allowed; keys are bearer tokens, never cookies", path)
			}
		}
	}

	// The real request still needs its key, and its answer is readable.
	w := do(http.MethodPost, "/mcp", "http://localhost:6274", map[string]string{"Authorization": "Bearer " + s.token})
	if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Errorf("POST /mcp from localhost: %d, Allow-Origin %q", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
	if exp := w.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(exp, "Mcp-Session-Id") {
		t.Errorf("Mcp-Session-Id is not exposed to the page: %q", exp)
	}
	if w := do(http.MethodPost, "/mcp", "http://localhost:6274", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("POST /mcp from localhost without a key: %d, want 401", w.Code)
	}

	// A foreign origin: refused before CORS, no CORS headers.
	w = do(http.MethodOptions, "/mcp", "http://evil.example", preflight)
	if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from evil.example: %d, Allow-Origin %q; want 403 and none", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}

	// The web UI (cookies) never answers cross-origin.
	w = do(http.MethodGet, "/", "http://localhost:6274", nil)
	if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("web UI sent Allow-Origin %q", got)
	}
}
