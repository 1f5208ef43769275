package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"munin/internal/service"
)

// TestRESTValidity: supersedes in the body of POST /entries, include_stale
// as a query parameter of GET /recall and a field of POST /recall, as_of on
// GET /entries, /entries/{slug} and /history/{slug}.
func TestRESTValidity(t *testing.T) {
	f := newFixture(t, service.Options{})
	write := func(body string) service.WriteResult {
		t.Helper()
		w := f.do(t, req{method: "POST", path: "/api/v1/entries", body: body, key: &f.write})
		var res service.WriteResult
		if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &res) != nil {
			t.Fatalf("POST /entries %s: %d %s", body, w.Code, w.Body)
		}
		return res
	}
	first := write(`{"slug": "plan/old", "content": "the falcon plan, first draft"}`)
	write(`{"slug": "plan/new", "content": "the falcon plan, final", "supersedes": ["plan/old"]}`)

	recall := func(method, path, body string) string {
		t.Helper()
		w := f.do(t, req{method: method, path: path, body: body, key: &f.read})
		var res service.RecallResult
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &res) != nil {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		var out []string
		for _, h := range res.Hits {
			out = append(out, strings.TrimSuffix(h.Slug+":"+h.State, ":"))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/api/v1/recall?q=falcon+plan", "", "plan/new"},
		{"GET", "/api/v1/recall?q=falcon+plan&include_stale=true", "", "plan/new plan/old:superseded"},
		{"POST", "/api/v1/recall", `{"query": "falcon plan", "include_stale": true}`, "plan/new plan/old:superseded"},
		{"POST", "/api/v1/recall", `{"query": "falcon plan"}`, "plan/new"},
	} {
		if got := recall(c.method, c.path, c.body); got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.method, c.path, c.body, got, c.want)
		}
	}
	if w := f.do(t, req{method: "GET", path: "/api/v1/recall?q=falcon&include_stale=maybe", key: &f.read}); w.Code != http.StatusBadRequest {
		t.Errorf("include_stale=maybe: %d %s, want 400", w.Code, w.Body)
	}

	var e service.Entry
	w := f.do(t, req{method: "GET", path: "/api/v1/entries/plan/old", key: &f.read})
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.SupersededBy != "plan/new" {
		t.Fatalf("GET /entries/plan/old: %d %s, want superseded_by plan/new", w.Code, w.Body)
	}

	then := url.QueryEscape(first.CreatedAt.Format(time.RFC3339Nano))
	w = f.do(t, req{method: "GET", path: "/api/v1/entries/plan/old?as_of=" + then, key: &f.read})
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "superseded_by") {
		t.Errorf("GET /entries/plan/old as of its writing: %d %s, want it live", w.Code, w.Body)
	}
	w = f.do(t, req{method: "GET", path: "/api/v1/entries?as_of=" + then, key: &f.read})
	var l service.ListResult
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &l) != nil || len(l.Entries) != 1 || l.Entries[0].Slug != "plan/old" || l.Entries[0].State != "" {
		t.Errorf("GET /entries as of the first write: %d %s, want plan/old alone, live", w.Code, w.Body)
	}
	w = f.do(t, req{method: "GET", path: "/api/v1/entries", key: &f.read})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"state":"superseded"`) {
		t.Errorf("GET /entries: %d %s, want plan/old marked superseded", w.Code, w.Body)
	}
	w = f.do(t, req{method: "GET", path: "/api/v1/history/plan/new?as_of=" + then, key: &f.read})
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /history/plan/new before its first version: %d %s, want 404", w.Code, w.Body)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	for _, path := range []string{"/api/v1/entries?as_of=", "/api/v1/entries/plan/old?as_of=", "/api/v1/history/plan/old?as_of="} {
		if w := f.do(t, req{method: "GET", path: path + future, key: &f.read}); w.Code != http.StatusBadRequest {
			t.Errorf("GET %s<future>: %d %s, want 400", path, w.Code, w.Body)
		}
	}
}
