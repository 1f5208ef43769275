package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestFailMapsServiceErrors: each kind of service error becomes its OAuth
// error name and status — also those no request reaches today (the
// service names no client invalid at the token endpoint yet, and nothing
// in it is unavailable) — and only server faults are logged.
func TestFailMapsServiceErrors(t *testing.T) {
	busy := memory.Errorf(memory.CodeUnavailable, "busy")
	busy.RetryAfter = 1500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
		header string // a header the answer must carry, "Name: value"
		logged bool
	}{
		{"named", memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidScope, "scope x"), 400, "invalid_scope", "", false},
		{"unnamed invalid", memory.Errorf(memory.CodeInvalid, "bad"), 400, "invalid_request", "", false},
		{"unknown client", memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidClient, "who"), 401, "invalid_client", `WWW-Authenticate: Basic realm="https://munin.example.com"`, false},
		{"grant ended in between", memory.Errorf(memory.CodeUnauthorized, "revoked"), 400, "invalid_grant", "", false},
		{"busy", busy, 503, "temporarily_unavailable", "Retry-After: 2", true},
		{"fault", errors.New("disk on fire"), 500, "server_error", "", true},
	} {
		logs := &bytes.Buffer{}
		e := &endpoints{cfg: Config{PublicURL: "https://munin.example.com"}, log: slog.New(slog.NewTextHandler(logs, nil))}
		rec := httptest.NewRecorder()
		e.fail(rec, httptest.NewRequest(http.MethodPost, TokenPath, nil), tc.err, memory.OAuthInvalidGrant)
		var body errorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tc.status || body.Error != tc.want {
			t.Errorf("%s: %d %s; want %d %s", tc.name, rec.Code, rec.Body, tc.status, tc.want)
		}
		if name, value, ok := strings.Cut(tc.header, ": "); ok && rec.Header().Get(name) != value {
			t.Errorf("%s: %s %q, want %q", tc.name, name, rec.Header().Get(name), value)
		}
		if strings.Contains(rec.Body.String(), "fire") {
			t.Errorf("%s: the answer tells an internal cause: %s", tc.name, rec.Body)
		}
		if (logs.Len() > 0) != tc.logged {
			t.Errorf("%s: logged %q, want logged %v", tc.name, logs, tc.logged)
		}
	}
}
