package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"munin/internal/service"
)

// TestChangesRoute: GET /changes pages the feed with next_cursor; bad
// since, limit or parameters are 400 invalid naming the parameter; a POST
// is 405.
func TestChangesRoute(t *testing.T) {
	f := newFixture(t, service.Options{BudgetOff: true})
	for _, slug := range []string{"a", "b", "c"} {
		w := f.do(t, req{method: http.MethodPost, path: "/api/v1/entries", body: `{"slug":"` + slug + `","content":"secret text"}`, key: &f.write})
		if w.Code != http.StatusCreated && w.Code != http.StatusOK {
			t.Fatalf("remember %s: %d %s", slug, w.Code, w.Body)
		}
	}
	var got []string
	since := ""
	for range 10 {
		w := f.do(t, req{method: http.MethodGet, path: "/api/v1/changes?limit=2&since=" + url.QueryEscape(since), key: &f.read})
		if w.Code != http.StatusOK {
			t.Fatalf("GET /changes: %d %s", w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "secret text") {
			t.Fatalf("the feed carries content: %s", w.Body)
		}
		var res service.ChangesResult
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.NextCursor == "" || res.Changes == nil {
			t.Fatalf("body %s: %v", w.Body, err)
		}
		since = res.NextCursor
		if len(res.Changes) == 0 {
			break
		}
		for _, c := range res.Changes {
			got = append(got, c.Project+" "+c.Kind+" "+c.Slug)
		}
	}
	if want := "ws/proj remember a,ws/proj remember b,ws/proj remember c"; strings.Join(got, ",") != want {
		t.Errorf("paged %v, want %s", got, want)
	}
	now := decode(t, f.do(t, req{method: http.MethodGet, path: "/api/v1/changes?since=now", key: &f.read}), http.StatusOK)
	if cs, _ := now["changes"].([]any); len(cs) != 0 || now["next_cursor"] == "" {
		t.Errorf("since=now: %v, want no changes and a cursor", now)
	}

	for _, c := range []struct{ query, want string }{
		{"since=garbage", "since"},
		{"since=" + since[:len(since)-2], "since"},
		{"limit=0x10", "limit"},
		{"limit=1001", "limit"},
		{"limit=-3", "limit"},
		{"cursor=x", "cursor"},
		{"since=a&since=b", "since"},
	} {
		code, msg := errorOf(t, f.do(t, req{method: http.MethodGet, path: "/api/v1/changes?" + c.query, key: &f.read}), http.StatusBadRequest)
		if code != "invalid" || !strings.Contains(msg, c.want) {
			t.Errorf("?%s: %s %q, want invalid naming %s", c.query, code, msg, c.want)
		}
	}
	if w := f.do(t, req{method: http.MethodPost, path: "/api/v1/changes", body: "{}", key: &f.read}); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /changes: %d, want 405", w.Code)
	}
	if w := f.do(t, req{method: http.MethodGet, path: "/api/v1/changes"}); w.Code != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", w.Code)
	}
}
