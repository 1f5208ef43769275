package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// xssContent is a memory written by a hostile agent.
const xssContent = "# Notes <b>bold</b>\n\n<img src=x onerror=\"window.__pwned=1\">\n\n<script>window.__pwned=1</script>\n\n" +
	"[click me](javascript:window.__pwned=1) and <a href=\"javascript:window.__pwned=1\">raw</a>\n\n" +
	"<iframe src=\"https://evil.example\"></iframe> <svg onload=\"window.__pwned=1\"></svg>\n"

func TestHostileContentIsInert(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "notes/xss", xssContent, "x")
	b := u.signIn(t, u.reader)
	for _, path := range []string{projPath + "/e/notes/xss", projPath + "/e/notes/xss?version=1", projPath + "?q=click+bold"} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		for _, bad := range activeMarkup(t, body) {
			t.Errorf("GET %s: active markup %s", path, bad)
		}
	}
	_, body := b.get(projPath + "?q=click")
	if !strings.Contains(body, "<mark>click</mark>") {
		t.Errorf("search snippet has no highlighted match:\n%s", body)
	}
	resp, _ := b.do("GET", projPath+"/e/notes/xss", nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

func TestHighlightEscapesFirst(t *testing.T) {
	got := string(highlight("a «<b>» c «x» d « e"))
	want := "a <mark>&lt;b&gt;</mark> c <mark>x</mark> d <mark> e</mark>"
	if got != want {
		t.Errorf("highlight = %q, want %q", got, want)
	}
}

func TestLineDiff(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	b := "one\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\nnine\nten\neleven\n"
	var ops []string
	for _, l := range lineDiff(a, b) {
		if l.Gap {
			ops = append(ops, "…")
			continue
		}
		ops = append(ops, l.Op+l.Text)
	}
	want := "…| five| six| seven|-eight|+EIGHT| nine| ten|+eleven"
	if got := strings.Join(ops, "|"); got != want {
		t.Errorf("diff = %q\nwant  %q", got, want)
	}
}

func TestReadKeyCannotEdit(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "first")
	u.remember(t, u.writerKey, "a", "second")
	b := u.signIn(t, u.reader)
	for _, path := range []string{projPath, projPath + "/e/a", projPath + "/e/a?version=1"} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		for _, form := range []string{"/save", "/forget/", "/restore/", "/edit/", "/new", `name="writes_per_hour"`, "/settings", `href="/keys"`} {
			if strings.Contains(body, form) {
				t.Errorf("read key sees %q on %s", form, path)
			}
		}
	}
	for _, path := range []string{projPath + "/new", projPath + "/edit/a", projPath + "/settings", "/keys"} {
		if code, _ := b.get(path); code != http.StatusForbidden {
			t.Errorf("read key GET %s: %d, want 403", path, code)
		}
	}
	for path, form := range map[string]url.Values{
		projPath + "/save":      {"slug": {"a"}, "content": {"mine"}, "expected_version": {"2"}},
		projPath + "/forget/a":  {"expected_version": {"2"}},
		projPath + "/restore/a": {"version": {"1"}},
		projPath + "/settings":  {"writes_per_hour": {"5"}},
	} {
		if code, _ := b.post(path, form); code != http.StatusForbidden {
			t.Errorf("read key POST %s: %d, want 403", path, code)
		}
	}
	if n := u.versions(t, "a"); n != 2 {
		t.Errorf("read key's posts changed the entry: %d versions", n)
	}
}

func TestEditRestoreForgetFlow(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.writer)
	code, body := b.get(projPath + "/new")
	if code != http.StatusOK || !strings.Contains(body, `name="expected_version" value="0"`) {
		t.Fatalf("new form: %d", code)
	}
	save := func(content, expected string) (int, string) {
		return b.post(projPath+"/save", url.Values{"slug": {"decisions/db"}, "title": {""}, "tags": {"db, arch"},
			"content": {content}, "expected_version": {expected}})
	}
	if code, _ := save("We use SQLite.\r\nIn WAL mode.", "0"); code != http.StatusSeeOther {
		t.Fatalf("create: %d", code)
	}
	if code, _ := save("We use SQLite.\nIn WAL mode, always.", "1"); code != http.StatusSeeOther {
		t.Fatalf("edit: %d", code)
	}
	// A stale form is a conflict: the text comes back, nothing is written.
	code, body = save("stale text", "1")
	if code != http.StatusConflict || !strings.Contains(body, "stale text") || u.versions(t, "decisions/db") != 2 {
		t.Fatalf("stale edit: %d, %d versions", code, u.versions(t, "decisions/db"))
	}
	// Invalid input re-renders the form with the reason, nothing written.
	code, body = b.post(projPath+"/save", url.Values{"slug": {"Bad Slug"}, "content": {"x"}, "expected_version": {"0"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "must match") {
		t.Errorf("bad slug: %d", code)
	}

	_, body = b.get(projPath + "/e/decisions/db")
	if !strings.Contains(body, "always.") || !strings.Contains(body, `href="/w/ws/p/proj?tag=db"`) {
		t.Errorf("entry page misses content or tags:\n%s", body)
	}
	_, body = b.get(projPath + "/e/decisions/db?diff=1..2")
	if !strings.Contains(body, `<tr class="del">`) || !strings.Contains(body, "In WAL mode, always.") {
		t.Errorf("diff page:\n%s", body)
	}
	if code, _ := b.get(projPath + "/e/decisions/db?from=1&to=2"); code != http.StatusOK {
		t.Errorf("diff form: %d", code)
	}

	if code, _ := b.post(projPath+"/restore/decisions/db", url.Values{"version": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("restore: %d", code)
	}
	got, err := u.get(u.writerKey, "decisions/db")
	if err != nil || got.Version != 3 || got.Content != "We use SQLite.\nIn WAL mode." || got.Agent != "alice" {
		t.Fatalf("after restore: %+v %v", got, err)
	}
	if hits := u.recall(t, u.writerKey, "always"); len(hits) != 0 {
		t.Errorf("the index still finds the text of version 2 after restoring version 1")
	}

	if code, _ := b.post(projPath+"/forget/decisions/db", url.Values{"expected_version": {"2"}}); code != http.StatusConflict {
		t.Errorf("forget with a stale version: %d, want 409", code)
	}
	if code, _ := b.post(projPath+"/forget/decisions/db", url.Values{"expected_version": {"3"}}); code != http.StatusSeeOther {
		t.Fatalf("forget: %d", code)
	}
	code, body = b.get(projPath + "/e/decisions/db")
	if code != http.StatusOK || !strings.Contains(body, `id="forgotten"`) {
		t.Errorf("forgotten entry page: %d", code)
	}
	_, body = b.get(projPath + "/audit?agent=alice&slug=decisions/")
	if strings.Count(body, `class="audit-row`) != 4 {
		t.Errorf("audit log filtered by agent and slug prefix: %d rows, want 4", strings.Count(body, `class="audit-row`))
	}
	_, body = b.get(projPath + "/audit?agent=root")
	if strings.Count(body, `class="audit-row`) != 0 {
		t.Error("audit log filter by agent ignored")
	}
}

func TestSearchLogShowsMisses(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "sqlite wal")
	for _, q := range []string{"sqlite", "kubernetes", "kubernetes"} { // agents' recalls; web searches are not logged
		u.recall(t, u.readKey, q)
	}
	b := u.signIn(t, u.reader)
	_, body := b.get(projPath + "/searches")
	if strings.Count(body, `class="search-row miss"`) != 2 || strings.Count(body, `class="search-row"`) != 1 {
		t.Errorf("search log rows wrong:\n%s", body)
	}
	if !strings.Contains(body, `<span class="query">kubernetes</span> <span class="meta">× 2`) {
		t.Errorf("missed queries list lacks kubernetes × 2")
	}
	_, body = b.get(projPath + "/searches?misses=1")
	if strings.Count(body, `class="search-row`) != 2 {
		t.Error("misses-only filter ignored")
	}
}

func TestKeysAndBudgetNeedAdmin(t *testing.T) {
	u := newUI(t)
	w := u.signIn(t, u.writer)
	if code, _ := w.get("/keys"); code != http.StatusForbidden {
		t.Errorf("write key GET /keys: %d", code)
	}
	if code, _ := w.post("/keys", url.Values{"workspace": {ws}, "project": {proj}, "agent": {"x"}, "role": {"admin"}}); code != http.StatusForbidden {
		t.Errorf("write key POST /keys: %d", code)
	}
	if code, _ := w.post("/keys/1/revoke", nil); code != http.StatusForbidden {
		t.Errorf("write key revoke: %d", code)
	}
	if code, _ := w.post(projPath+"/settings", url.Values{"writes_per_hour": {"5"}}); code != http.StatusForbidden {
		t.Errorf("write key sets budget: %d", code)
	}

	a := u.signIn(t, u.admin)
	code, body := a.post("/keys", url.Values{"workspace": {ws}, "project": {proj}, "agent": {"ci"}, "role": {"read"}})
	m := regexpToken.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create key: %d, token shown: %v", code, m != nil)
	}
	if _, err := u.env.Svc.Authenticate(context.Background(), m[1]); err != nil {
		t.Fatalf("the shown token does not work: %v", err)
	}
	if _, body := a.get("/keys"); strings.Contains(body, m[1]) {
		t.Error("the token is shown again on the keys page")
	}
	if code, body := a.post("/keys", url.Values{"workspace": {ws}, "project": {"p"}, "agent": {"x"}, "role": {"boss"}}); code != http.StatusBadRequest || !strings.Contains(body, "read, propose, write or admin") {
		t.Errorf("bad role: %d", code)
	}
	if code, _ := a.post("/keys/"+itoa(u.writerKey.ID)+"/revoke", nil); code != http.StatusSeeOther {
		t.Errorf("revoke: %d", code)
	}
	if code, _ := w.get(projPath); code != http.StatusSeeOther {
		t.Errorf("revoked writer still signed in: %d", code)
	}
	if code, _ := a.post("/keys/999/revoke", nil); code != http.StatusNotFound {
		t.Errorf("revoke unknown key: %d, want 404", code)
	}

	if code, _ := a.post(projPath+"/settings", url.Values{"writes_per_hour": {"7"}}); code != http.StatusSeeOther {
		t.Fatalf("set budget: %d", code)
	}
	if _, limit, _ := u.env.Svc.WriteUsage(context.Background(), ref); limit != 7 {
		t.Errorf("budget %d, want 7", limit)
	}
	if code, _ := a.post(projPath+"/settings", url.Values{"writes_per_hour": {"-3"}}); code != http.StatusBadRequest {
		t.Errorf("negative budget: %d", code)
	}

	// The byte budget: set in MiB, kept when the field is left out, and a
	// bad value changes neither budget.
	if code, _ := a.post(projPath+"/settings", url.Values{"writes_per_hour": {"8"}, "mib_per_hour": {"3"}}); code != http.StatusSeeOther {
		t.Fatalf("set byte budget: %d", code)
	}
	for _, bad := range []string{"-1", "x", "1048577"} {
		if code, _ := a.post(projPath+"/settings", url.Values{"writes_per_hour": {"9"}, "mib_per_hour": {bad}}); code != http.StatusBadRequest {
			t.Errorf("mib_per_hour %q: %d, want 400", bad, code)
		}
	}
	if code, _ := a.post(projPath+"/settings", url.Values{"writes_per_hour": {"8"}}); code != http.StatusSeeOther {
		t.Fatalf("set budget without bytes: %d", code)
	}
	if _, limit, _ := u.env.Svc.WriteUsage(context.Background(), ref); limit != 8 {
		t.Errorf("budget %d, want 8", limit)
	}
	if _, limit, _ := u.env.Svc.WriteUsageBytes(context.Background(), ref); limit != 3<<20 {
		t.Errorf("byte budget %d, want %d", limit, 3<<20)
	}
	if _, body := a.get(projPath + "/settings"); !strings.Contains(body, `id="budget-mib">3<`) {
		t.Errorf("settings page does not show the byte budget of 3 MiB:\n%s", body)
	}
}

func TestClientMistakesAre4xx(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "one")
	b := u.signIn(t, u.writer)
	for path, want := range map[string]int{
		projPath + "?page=abc":                                http.StatusBadRequest,
		projPath + "?page=0":                                  http.StatusBadRequest,
		projPath + "?sort=size":                               http.StatusBadRequest,
		projPath + "?tag=a%20b":                               http.StatusBadRequest,
		projPath + "?page=99":                                 http.StatusOK,
		projPath + "?page=368934881474191034":                 http.StatusBadRequest, // offset would wrap to 34
		projPath + "?page=9223372036854775807":                http.StatusBadRequest,
		projPath + "/e/a?version=x":                           http.StatusBadRequest,
		projPath + "/e/a?version=9":                           http.StatusNotFound,
		projPath + "/e/a?diff=1":                              http.StatusBadRequest,
		projPath + "/e/a?diff=1..9":                           http.StatusNotFound,
		projPath + "/e/nope":                                  http.StatusNotFound,
		projPath + "/e/a/../b":                                http.StatusBadRequest,
		projPath + "/audit?since=today":                       http.StatusBadRequest,
		projPath + "/audit?since=2026-12-01&until=2026-11-01": http.StatusBadRequest,
		"/w/BAD/p/proj":                                       http.StatusBadRequest,
		"/nothing/here":                                       http.StatusNotFound,
		"/static/nope.css":                                    http.StatusNotFound,
		"/static/style.css":                                   http.StatusOK,
	} {
		if code, _ := b.get(path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	if code, _ := b.post(projPath+"/restore/a", url.Values{"version": {"1"}}); code != http.StatusBadRequest {
		t.Errorf("restore the latest version: %d, want 400", code)
	}
	if resp, _ := b.do("PUT", projPath+"/save", nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("PUT: %d, Allow %q; want 405, Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if resp, _ := b.do("DELETE", "/keys", nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE /keys: %d, Allow %q; want 405, Allow GET, HEAD, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if n := u.versions(t, "a"); n != 1 {
		t.Errorf("mistakes wrote versions: %d", n)
	}
}

// activeMarkup parses a page and lists what could run script or load
// content: script elements other than Munin's own, event-handler
// attributes, javascript: URLs, frames, embeds and images.
func activeMarkup(t *testing.T, page string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				if len(n.Attr) != 2 || n.Attr[0].Val != "/static/app.js" || n.FirstChild != nil {
					bad = append(bad, "<script>")
				}
			case "iframe", "object", "embed", "img", "svg", "base", "meta", "link", "style":
				if n.Data != "meta" && n.Data != "link" || !ownHead(n) {
					bad = append(bad, "<"+n.Data+">")
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(strings.ToLower(a.Key), "on") || strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") {
					bad = append(bad, fmt.Sprintf("<%s %s=%q>", n.Data, a.Key, a.Val))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return bad
}

// ownHead reports whether n is one of the layout's own head elements.
func ownHead(n *html.Node) bool { return n.Parent != nil && n.Parent.Data == "head" }
