package web

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSignInRequired(t *testing.T) {
	u := newUI(t)
	b := u.browser(t)
	for _, path := range []string{projPath, projPath + "/e/a", projPath + "/audit", "/keys"} {
		resp, _ := b.do("GET", path, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("GET %s without a session: %d to %q, want 303 to /", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	code, body := b.get("/")
	if code != http.StatusOK || !strings.Contains(body, `action="/login"`) {
		t.Errorf("/ without a session: %d, want the sign-in form", code)
	}
	code, _ = b.post(projPath+"/save", url.Values{"slug": {"a"}, "content": {"x"}, "expected_version": {"0"}, "csrf": {"whatever"}})
	if code != http.StatusUnauthorized || u.versions(t, "a") != 0 {
		t.Errorf("POST without a session: %d, %d versions; want 401 and nothing written", code, u.versions(t, "a"))
	}
}

func TestSignInWrongKey(t *testing.T) {
	u := newUI(t)
	for _, key := range []string{"", "munin_nope", "not-a-key"} {
		b := u.browser(t)
		resp, body := b.do("POST", "/login", url.Values{"key": {key}})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "unknown or revoked") {
			t.Errorf("key %q: %d, want 401 with a clear message:\n%s", key, resp.StatusCode, body)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("key %q: a failed sign-in set cookies %v", key, resp.Cookies())
		}
	}
}

func TestSessionCookieFlags(t *testing.T) {
	u := newUI(t)
	for _, c := range []struct {
		name   string
		tls    bool
		origin string // a browser behind a proxy that ends TLS sends https here
		secure bool
	}{
		{"plain HTTP", false, "", false},
		{"plain HTTP, http page", false, "http://127.0.0.1:8080", false},
		{"TLS", true, "", true},
		{"TLS ended by a proxy", false, "https://munin.example", true},
	} {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"key": {u.writer}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.tls {
			req.TLS = &tls.ConnectionState{}
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		w := httptest.NewRecorder()
		u.h.ServeHTTP(w, req)
		if w.Code != http.StatusSeeOther {
			t.Fatalf("%s: sign in: %d %s", c.name, w.Code, w.Body)
		}
		cookies := w.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("%s: cookies %v, want one", c.name, cookies)
		}
		ck := cookies[0]
		if ck.Name != cookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != c.secure || ck.Path != "/" {
			t.Errorf("%s: cookie %+v, want HttpOnly, SameSite=Strict, Secure=%v", c.name, ck, c.secure)
		}
		if strings.Contains(ck.Value, u.writer) || len(ck.Value) < 43 {
			t.Errorf("cookie value %q must be a random session id, not the key", ck.Value)
		}
	}
}

func TestSignOutAndExpiry(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.writer)
	if code, body := b.get(projPath); code != http.StatusOK || strings.Contains(body, u.writer) {
		t.Fatalf("project page: %d (or the key is on the page)", code)
	}
	if code, _ := b.post("/logout", nil); code != http.StatusSeeOther {
		t.Fatalf("sign out: %d", code)
	}
	if code, _ := b.get(projPath); code != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want 303 to sign in", code)
	}

	// Idle timeout: a request within 8 h keeps the session; 8 h of nothing ends it.
	b = u.signIn(t, u.writer)
	u.clock.advance(7 * time.Hour)
	if code, _ := b.get(projPath); code != http.StatusOK {
		t.Fatalf("after 7 h: %d", code)
	}
	u.clock.advance(8 * time.Hour)
	if code, _ := b.get(projPath); code != http.StatusSeeOther {
		t.Errorf("after 8 h idle: %d, want the session ended", code)
	}

	// Absolute age: 24 h after sign-in, however busy.
	b = u.signIn(t, u.writer)
	for range 4 {
		u.clock.advance(5 * time.Hour)
		if code, _ := b.get(projPath); code != http.StatusOK {
			t.Fatalf("busy session ended early: %d", code)
		}
	}
	u.clock.advance(5 * time.Hour)
	if code, _ := b.get(projPath); code != http.StatusSeeOther {
		t.Errorf("after 25 h: %d, want the session ended", code)
	}
}

func TestRevokedKeyEndsSession(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.writer)
	if err := u.env.Svc.RevokeKey(context.Background(), u.writerKey.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := b.get(projPath); code != http.StatusSeeOther {
		t.Errorf("GET after revoke: %d, want 303 to sign in", code)
	}
	code, _ := b.post(projPath+"/save", url.Values{"slug": {"a"}, "content": {"x"}, "expected_version": {"0"}})
	if code != http.StatusUnauthorized || u.versions(t, "a") != 0 {
		t.Errorf("POST after revoke: %d, %d versions; want 401, nothing written", code, u.versions(t, "a"))
	}
}

func TestCSRFToken(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.writer)
	form := func(token string) url.Values {
		v := url.Values{"slug": {"notes/x"}, "content": {"hello"}, "expected_version": {"0"}, "is_new": {"1"}}
		if token != "-" {
			v.Set("csrf", token)
		}
		return v
	}
	other := u.signIn(t, u.admin) // a valid token, but of another session
	// Change the first character to another one; "x"+rest would equal the
	// real token whenever it happens to start with x.
	wrong := "x" + b.csrf[1:]
	if b.csrf[0] == 'x' {
		wrong = "y" + b.csrf[1:]
	}
	for name, token := range map[string]string{"missing": "-", "empty": "", "wrong": wrong, "other session": other.csrf} {
		resp, body := b.do("POST", projPath+"/save", form(token))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s token: %d, want 403 naming CSRF", name, resp.StatusCode)
		}
		if n := u.versions(t, "notes/x"); n != 0 {
			t.Fatalf("%s token: %d versions written", name, n)
		}
	}
	if code, _ := b.post(projPath+"/save", form(b.csrf)); code != http.StatusSeeOther || u.versions(t, "notes/x") != 1 {
		t.Errorf("right token: %d, %d versions; want 303 and one version", code, u.versions(t, "notes/x"))
	}
}

func TestCrossOriginPostRefused(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.writer)
	form := url.Values{"slug": {"notes/x"}, "content": {"hello"}, "expected_version": {"0"}, "csrf": {b.csrf}}
	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "http://evil.example"},
	} {
		resp, _ := b.do("POST", projPath+"/save", form, hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s: %d, want 403", hdr[0], hdr[1], resp.StatusCode)
		}
	}
	// Sign-in has no session token yet; the cross-origin check guards it.
	resp, _ := u.browser(t).do("POST", "/login", url.Values{"key": {u.writer}}, "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("cross-site sign-in: %d, cookies %v; want 403 and none", resp.StatusCode, resp.Cookies())
	}
	if n := u.versions(t, "notes/x"); n != 0 {
		t.Fatalf("cross-origin posts wrote %d versions", n)
	}
	if code, _ := b.post(projPath+"/save", form); code != http.StatusSeeOther {
		t.Errorf("same-origin post: %d, want 303", code)
	}
}

func TestOtherProjectHidden(t *testing.T) {
	u := newUI(t)
	_, c := u.env.Key(t, "ws", "secret", "eve", "write")
	other := c.First()
	u.remember(t, other, "plans", "the secret plan")
	// Another project answers as a missing one (404), for every project
	// role: the admin of ws/proj administers ws/proj only.
	for _, token := range []string{u.writer, u.admin} {
		b := u.signIn(t, token)
		for _, path := range []string{"/w/ws/p/secret", "/w/ws/p/secret/e/plans", "/w/ws/p/secret/audit", "/w/ws/p/secret/searches?q=plan"} {
			code, body := b.get(path)
			_, missing := b.get(strings.Replace(path, "secret", "nope", 1))
			if code != http.StatusNotFound || strings.Contains(body, "secret plan") || body != strings.ReplaceAll(missing, "nope", "secret") {
				t.Errorf("key of ws/proj GET %s: %d, want the 404 of a missing project, without content", path, code)
			}
		}
		if _, body := b.get("/"); strings.Contains(body, "secret") {
			t.Error("the overview of a project key lists another project")
		}
		code, _ := b.post("/w/ws/p/secret/save", url.Values{"slug": {"plans"}, "content": {"mine"}, "expected_version": {"1"}})
		if code != http.StatusNotFound {
			t.Errorf("POST into another project: %d, want 404", code)
		}
	}
	if n, err := u.history(other, "plans"); err != nil || len(n) != 1 {
		t.Errorf("the other project's entry has %d versions (%v), want 1", len(n), err)
	}
}
