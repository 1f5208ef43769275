package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"munin/internal/api"
	"munin/internal/service"
)

func TestRoundTrip(t *testing.T) {
	f := newFixture(t, service.Options{})
	w := &f.write

	// create two versions of one slug and a few others
	m := decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: w,
		body: `{"slug":"decisions/db-choice","content":"We use SQLite with WAL.","title":"DB choice","tags":["db","arch"]}`}), http.StatusCreated)
	if m["project"] != "ws/proj" || m["slug"] != "decisions/db-choice" || m["version"] != 1.0 || m["created_at"] == nil || len(m) != 4 {
		t.Fatalf("create: %v, want {project, slug, version, created_at}", m)
	}
	rec := f.do(t, req{method: "POST", path: "/api/v1/entries", key: w,
		body: `{"slug":"decisions/db-choice","content":"We use SQLite with WAL and one writer per file.","tags":["db"],"expected_version":1}`})
	m = decode(t, rec, http.StatusCreated)
	if m["version"] != 2.0 {
		t.Fatalf("second version: %v", m)
	}
	if loc := rec.Header().Get("Location"); loc != "/api/v1/entries/decisions/db-choice" {
		t.Errorf("Location %q", loc)
	}
	for i, slug := range []string{"decisions/api-style", "decisions/auth", "notes/meeting"} {
		tags := `["arch"]`
		if i == 2 {
			tags = `[]`
		}
		decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: w,
			body: fmt.Sprintf(`{"slug":%q,"content":"text of %s","tags":%s}`, slug, slug, tags)}), http.StatusCreated)
	}

	// get latest, then version 1 (the read key may read)
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries/decisions/db-choice", key: &f.read}), http.StatusOK)
	if m["version"] != 2.0 || m["latest_version"] != 2.0 || m["agent"] != "writer" ||
		!strings.Contains(m["content"].(string), "one writer") || m["title"] == "" {
		t.Fatalf("get latest: %v", m)
	}
	if m["project"] != "ws/proj" {
		t.Errorf("get: project %v, want ws/proj", m["project"])
	}
	for _, k := range []string{"project", "slug", "version", "title", "content", "tags", "agent", "created_at", "latest_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("get: field %s missing in %v", k, m)
		}
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries/decisions/db-choice?version=1", key: &f.read}), http.StatusOK)
	if m["version"] != 1.0 || m["latest_version"] != 2.0 || m["title"] != "DB choice" {
		t.Fatalf("get v1: %v", m)
	}

	// history, newest first
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/history/decisions/db-choice", key: &f.read}), http.StatusOK)
	vs := m["versions"].([]any)
	if m["project"] != "ws/proj" || m["slug"] != "decisions/db-choice" || len(vs) != 2 || vs[0].(map[string]any)["version"] != 2.0 || vs[1].(map[string]any)["version"] != 1.0 {
		t.Fatalf("history: %v", m)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/history/decisions/db-choice?limit=1", key: &f.read}), http.StatusOK)
	if len(m["versions"].([]any)) != 1 {
		t.Fatalf("history limit 1: %v", m)
	}

	// list with prefix, paging through with the cursor
	var slugs []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		m = decode(t, f.do(t, req{method: "GET", key: &f.read,
			path: "/api/v1/entries?prefix=decisions/&limit=2&cursor=" + url.QueryEscape(cursor)}), http.StatusOK)
		for _, e := range m["entries"].([]any) {
			if p := e.(map[string]any)["project"]; p != "ws/proj" {
				t.Fatalf("list entry without its project (%v): %v", p, e)
			}
			slugs = append(slugs, e.(map[string]any)["slug"].(string))
		}
		cursor = m["next_cursor"].(string)
		if cursor == "" {
			break
		}
	}
	if got := strings.Join(slugs, ","); got != "decisions/api-style,decisions/auth,decisions/db-choice" {
		t.Fatalf("list by prefix: %s", got)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries?tag=db", key: &f.read}), http.StatusOK)
	if es := m["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["slug"] != "decisions/db-choice" {
		t.Fatalf("list by tag: %v", m)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries?prefix=notes/", key: &f.read}), http.StatusOK)
	if es := m["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["tags"] == nil {
		t.Fatalf("entry without tags must list tags as []: %v", m)
	}

	// recall, by GET and by POST, with a tag filter
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/recall?q=writer&tags=db", key: &f.read}), http.StatusOK)
	hits := m["hits"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["slug"] != "decisions/db-choice" {
		t.Fatalf("recall GET: %v", m)
	}
	if p := hits[0].(map[string]any)["project"]; p != "ws/proj" {
		t.Errorf("hit: project %v, want ws/proj", p)
	}
	for _, k := range []string{"project", "slug", "title", "version", "score", "snippet", "tags", "updated_at"} {
		if _, ok := hits[0].(map[string]any)[k]; !ok {
			t.Errorf("hit: field %s missing", k)
		}
	}
	m = decode(t, f.do(t, req{method: "POST", path: "/api/v1/recall", key: &f.read,
		body: `{"query":"text","limit":10,"tags":["arch"]}`}), http.StatusOK)
	if n := len(m["hits"].([]any)); n != 2 {
		t.Fatalf("recall POST with tag arch: %d hits, want 2: %v", n, m)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/recall?q=nothingmatchesthis", key: &f.read}), http.StatusOK)
	if hits, ok := m["hits"].([]any); !ok || len(hits) != 0 {
		t.Fatalf("no hits must be []: %s", f.do(t, req{method: "GET", path: "/api/v1/recall?q=nothingmatchesthis", key: &f.read}).Body.String())
	}

	// forget, then get is 404 and history shows the tombstone
	m = decode(t, f.do(t, req{method: "DELETE", path: "/api/v1/entries/decisions/db-choice?expected_version=2", key: w}), http.StatusOK)
	if m["project"] != "ws/proj" || m["slug"] != "decisions/db-choice" || m["version"] != 3.0 || m["created_at"] == nil || len(m) != 4 {
		t.Fatalf("delete: %v, want {project, slug, version, created_at}", m)
	}
	code, msg := errorOf(t, f.do(t, req{method: "GET", path: "/api/v1/entries/decisions/db-choice", key: &f.read}), http.StatusNotFound)
	if code != "not_found" || !strings.Contains(msg, "forgotten") {
		t.Fatalf("get after forget: %s %s", code, msg)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/history/decisions/db-choice", key: &f.read}), http.StatusOK)
	if v := m["versions"].([]any)[0].(map[string]any); v["version"] != 3.0 || v["deleted"] != true {
		t.Fatalf("history after forget: %v", m)
	}
	m = decode(t, f.do(t, req{method: "GET", path: "/api/v1/recall?q=writer", key: &f.read}), http.StatusOK)
	if n := len(m["hits"].([]any)); n != 0 {
		t.Fatalf("forgotten entry still recalled: %v", m)
	}
}

func TestConflict(t *testing.T) {
	f := newFixture(t, service.Options{})
	decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
		body: `{"slug":"a","content":"one"}`}), http.StatusCreated)
	code, msg := errorOf(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
		body: `{"slug":"a","content":"two","expected_version":0}`}), http.StatusConflict)
	if code != "conflict" {
		t.Fatalf("code %s: %s", code, msg)
	}
	errorOf(t, f.do(t, req{method: "DELETE", path: "/api/v1/entries/a?expected_version=5", key: &f.write}), http.StatusConflict)
	m := decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries/a", key: &f.read}), http.StatusOK)
	if m["version"] != 1.0 || m["content"] != "one" {
		t.Fatalf("a conflict must change nothing: %v", m)
	}
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t, service.Options{})
	for i := 0; i < 2; i++ {
		m := decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
			header: map[string]string{"Idempotency-Key": "retry-1"},
			body:   `{"slug":"a","content":"once"}`}), http.StatusCreated)
		if m["version"] != 1.0 {
			t.Fatalf("attempt %d: %v", i, m)
		}
	}
	code, _ := errorOf(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
		header: map[string]string{"Idempotency-Key": "x"},
		body:   `{"slug":"a","content":"once","idempotency_key":"y"}`}), http.StatusBadRequest)
	if code != "invalid" {
		t.Fatal(code)
	}
}

func TestReadKeyCannotWrite(t *testing.T) {
	f := newFixture(t, service.Options{})
	decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
		body: `{"slug":"kept","content":"stays"}`}), http.StatusCreated)
	for _, rq := range []req{
		{method: "POST", path: "/api/v1/entries", body: `{"slug":"new","content":"x"}`},
		{method: "DELETE", path: "/api/v1/entries/kept"},
		{method: "PUT", path: "/api/v1/project/budget", body: `{"writes_per_hour":5}`},
	} {
		rq.key = &f.read
		code, msg := errorOf(t, f.do(t, rq), http.StatusForbidden)
		if code != "forbidden" {
			t.Errorf("%s %s: %s %s", rq.method, rq.path, code, msg)
		}
	}
	m := decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries", key: &f.read}), http.StatusOK)
	if es := m["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["version"] != 1.0 {
		t.Fatalf("a refused write changed something: %v", m)
	}
	// The budget PUT is admin-only even for write keys.
	errorOf(t, f.do(t, req{method: "PUT", path: "/api/v1/project/budget", key: &f.write, body: `{"writes_per_hour":5}`}), http.StatusForbidden)
}

func TestNoKeyIs401(t *testing.T) {
	f := newFixture(t, service.Options{})
	rec := f.do(t, req{method: "GET", path: "/api/v1/entries"})
	code, _ := errorOf(t, rec, http.StatusUnauthorized)
	if code != "unauthorized" || rec.Header().Get("WWW-Authenticate") != api.AuthChallenge {
		t.Fatalf("code %s, WWW-Authenticate %q", code, rec.Header().Get("WWW-Authenticate"))
	}
}

func TestBudget(t *testing.T) {
	f := newFixture(t, service.Options{})
	rec := f.do(t, req{method: "PUT", path: "/api/v1/project/budget", key: &f.admin, body: `{"writes_per_hour":2}`})
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("set budget: %d %s", rec.Code, rec.Body.String())
	}
	for i := 0; i < 2; i++ {
		decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
			body: fmt.Sprintf(`{"slug":"e%d","content":"x"}`, i)}), http.StatusCreated)
	}
	rec = f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write, body: `{"slug":"e9","content":"x"}`})
	code, msg := errorOf(t, rec, http.StatusTooManyRequests)
	if code != "budget_exhausted" || !strings.Contains(msg, "resets") {
		t.Fatalf("%s: %s", code, msg)
	}
	secs, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || secs < 1 || secs > 3600 {
		t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
	}
	code, msg = errorOf(t, f.do(t, req{method: "PUT", path: "/api/v1/project/budget", key: &f.admin, body: `{}`}), http.StatusBadRequest)
	if !strings.Contains(msg, "writes_per_hour") {
		t.Fatalf("%s: %s", code, msg)
	}
	errorOf(t, f.do(t, req{method: "PUT", path: "/api/v1/project/budget", key: &f.admin, body: `{"writes_per_hour":-1}`}), http.StatusBadRequest)
}

func TestRoutes(t *testing.T) {
	f := newFixture(t, service.Options{})
	code, _ := errorOf(t, f.do(t, req{method: "GET", path: "/api/v1/nope", key: &f.read}), http.StatusNotFound)
	if code != "not_found" {
		t.Fatal(code)
	}
	patch := f.do(t, req{method: "PATCH", path: "/api/v1/entries", key: &f.read})
	errorOf(t, patch, http.StatusMethodNotAllowed)
	if allow := patch.Header().Get("Allow"); allow != "GET, POST" {
		t.Errorf("405 Allow = %q, want GET, POST", allow)
	}
	// A slug that ends in "/history" is an ordinary slug under /entries.
	decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &f.write,
		body: `{"slug":"team/history","content":"the team's history"}`}), http.StatusCreated)
	m := decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries/team/history", key: &f.read}), http.StatusOK)
	if m["content"] != "the team's history" {
		t.Fatal(m)
	}
}
