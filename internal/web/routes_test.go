package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// routeParams are the web UI's pages (GET) with the query parameters each
// reads; TestEveryRouteAndParameter walks them all.
var routeParams = []struct {
	path   string
	params []string
}{
	{"/", nil},
	{"/search", []string{"q", "tag", "project"}},
	{"/keys", nil},
	{projPath, []string{"q", "tag", "sort", "scope", "page", "stale"}},
	{projPath + "/new", []string{"slug"}},
	{projPath + "/e/a", []string{"version", "diff", "from", "to"}},
	{projPath + "/edit/a", nil},
	{projPath + "/audit", []string{"agent", "slug", "since", "until", "before", "misses"}},
	{projPath + "/searches", []string{"agent", "slug", "since", "until", "before", "misses"}},
	{projPath + "/settings", nil},
	{projPath + "/review", []string{"state", "cursor"}},
	{projPath + "/review/1", nil},
	{projPath + "/review/1/edit", nil},
}

// paramValues are valid and garbage values of any parameter.
var paramValues = []string{
	"", "1", "0", "-1", "2", "yes", "x", "1..2", "2..1", "..", "1..", "99999999999999999999",
	"2026-11-30", "2026-11-30T14:05", "2026-13-45", "ws/proj", "ws/other", "all", "title", "slug",
	"<script>", "ä\u202e", "a\x00b", strings.Repeat("z", 3000),
}

// TestEveryRouteAndParameter: every page, with each of its documented query
// parameters at every value above — alone, and all together — answers
// without a server error, for a read and an admin key. (?misses=1 on the
// audit log answered 500, "no such column: hits".)
func TestEveryRouteAndParameter(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "first")
	u.remember(t, u.writerKey, "a", "second")
	u.recall(t, u.readKey, "first")
	for _, token := range []string{u.reader, u.admin} {
		b := u.signIn(t, token)
		for _, rp := range routeParams {
			try := func(q url.Values) {
				t.Helper()
				path := rp.path
				if len(q) > 0 {
					path += "?" + q.Encode()
				}
				if code, body := b.get(path); code >= 500 {
					t.Errorf("GET %.200s: %d %s", path, code, errorText(body))
				}
			}
			try(nil)
			for _, v := range paramValues {
				all := url.Values{}
				for _, p := range rp.params {
					try(url.Values{p: {v}})
					all.Set(p, v)
				}
				if len(all) > 1 {
					try(all)
				}
			}
		}
	}
}

// TestAuditIgnoresMisses: the audit log has no hits; its page ignores the
// search log's "misses" filter instead of failing on it.
func TestAuditIgnoresMisses(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "first")
	b := u.signIn(t, u.reader)
	code, body := b.get(projPath + "/audit?misses=1")
	if code != http.StatusOK || !strings.Contains(body, ">a<") {
		t.Fatalf("audit?misses=1: %d %s", code, errorText(body))
	}
}

// TestSignInPageStatesRoles: the sign-in page says what each kind of key
// reaches — a server-admin key administers the server and reads no memory,
// every other key its own project — and no longer that an admin key sees
// every workspace.
func TestSignInPageStatesRoles(t *testing.T) {
	u := newUI(t)
	code, body := u.browser(t).get("/")
	text := strings.Join(strings.Fields(body), " ")
	if code != http.StatusOK || strings.Contains(text, "every workspace") ||
		!strings.Contains(text, "A server-admin key administers the server and reads no memory") ||
		!strings.Contains(text, "any other key reaches its own project") {
		t.Fatalf("sign-in page (%d):\n%s", code, text)
	}
}
