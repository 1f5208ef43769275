package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"munin/internal/reqlog"
)

// TestRequestLogNamesTheSignedInPerson: the front door's log line for a web
// request names the agent of the session's key, as it does for /mcp.
func TestRequestLogNamesTheSignedInPerson(t *testing.T) {
	u := newUI(t)
	serve := func(r *http.Request) *reqlog.Info {
		ctx, info := reqlog.With(r.Context())
		u.h.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
		return info
	}

	login := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"key": {u.writer}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if info := serve(login); info.Agent != "alice" || info.Project != "ws/proj" {
		t.Errorf("sign-in logged as %+v, want alice in ws/proj", info)
	}

	b := u.signIn(t, u.writer)
	page := httptest.NewRequest(http.MethodGet, "/w/ws/p/proj", nil)
	for _, c := range b.c.Jar.Cookies(mustURL(t, u.srv.URL)) {
		page.AddCookie(c)
	}
	if info := serve(page); info.Agent != "alice" {
		t.Errorf("page request logged as %+v, want alice", info)
	}

	anonymous := httptest.NewRequest(http.MethodGet, "/w/ws/p/proj", nil)
	if info := serve(anonymous); info.Agent != "" {
		t.Errorf("a request without a session was logged as %+v", info)
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
