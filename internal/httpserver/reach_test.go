package httpserver

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestKeyNeverReachesAnotherProject: a caller holding keys for team/backend
// and team/shared never reads, writes or learns of team/other through any
// REST route — by naming it, by crafted list cursors, by slugs that spell
// its path, or by a recall across all its projects.
func TestKeyNeverReachesAnotherProject(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleAdmin)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	other, _ := s.env.Key(t, "team", "other", "agent-o", memory.RoleAdmin)
	for _, seed := range []struct{ token, body string }{
		{other, `{"slug":"secret/plan","content":"kumquat zeppelin from the other team","tags":["hidden"]}`},
		{other, `{"slug":"secret/plan-b","content":"kumquat zeppelin again"}`},
		{a, `{"slug":"notes/a","content":"kumquat in backend"}`},
		{a, `{"slug":"secret/mine","content":"ours"}`},
	} {
		if r := s.call(t, "POST", "/api/v1/entries", bearer(seed.token), seed.body); r.status != http.StatusCreated {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	// A cursor team/other's own list hands out, and made-up ones.
	r := s.call(t, "GET", "/api/v1/entries?limit=1", bearer(other), "")
	otherCursor := jsonField(t, r.body, "next_cursor")
	if otherCursor == "" {
		t.Fatalf("no cursor from team/other's list: %s", r.body)
	}
	// b64("a") starts a page before every slug of the project it is used in.
	cursors := []string{otherCursor, b64("a"), b64("secret/mine"), b64("secret/"), b64("secret/plan"), b64("team/other/secret/plan"), b64("../other"), "team/other", "%00"}

	auth := bearer(a, b)
	var calls []route
	calls = append(calls, routesIn("team/other", "secret/plan")...)
	for _, c := range cursors {
		calls = append(calls,
			route{"GET", "/api/v1/entries?cursor=" + url.QueryEscape(c), ""},
			route{"GET", "/api/v1/entries?prefix=secret/&cursor=" + url.QueryEscape(c), ""},
			route{"GET", "/api/v1/entries?project=team/shared&cursor=" + url.QueryEscape(c), ""},
			route{"GET", "/api/v1/entries?project=team/other&cursor=" + url.QueryEscape(c), ""},
		)
	}
	for _, slug := range []string{"secret/plan", "team/other/secret/plan", "other/secret/plan", "../other/secret/plan", "..%2Fother%2Fsecret%2Fplan", "secret%2Fplan"} {
		calls = append(calls,
			route{"GET", "/api/v1/entries/" + slug, ""},
			route{"GET", "/api/v1/entries/" + slug + "?project=team/shared", ""},
			route{"GET", "/api/v1/history/" + slug, ""},
			route{"GET", "/api/v1/entries/" + slug + "?version=1", ""},
		)
	}
	calls = append(calls,
		route{"GET", "/api/v1/recall?q=kumquat+zeppelin", ""},
		route{"GET", "/api/v1/recall?q=kumquat&tags=hidden", ""},
		route{"POST", "/api/v1/recall", `{"query":"zeppelin","limit":50}`},
		route{"POST", "/api/v1/recall", `{"query":"zeppelin","project":"team/shared"}`},
		route{"GET", "/api/v1/entries?tag=hidden", ""},
		route{"GET", "/api/v1/entries?prefix=secret/plan", ""},
		route{"DELETE", "/api/v1/entries/secret/plan", ""},
		route{"DELETE", "/api/v1/entries/secret/plan?project=team/shared", ""},
		route{"PUT", "/api/v1/project/budget", `{"project":"team/other","writes_per_hour":1}`},
	)
	for _, c := range calls {
		r := s.call(t, c.method, c.path, auth, c.body)
		if r.status >= 500 {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		for _, leak := range []string{"zeppelin from", "plan-b", "agent-o", `"hidden"`, `"project":"team/other"`, `"slug":"secret/plan"`} {
			if strings.Contains(r.body, leak) {
				t.Errorf("%s %s %s: the answer shows %q of team/other: %s", c.method, c.path, c.body, leak, r.body)
			}
		}
		if strings.Contains(r.body, "team/other") && !strings.Contains(c.path+c.body, "team/other") && !strings.Contains(c.path, "team%2Fother") {
			t.Errorf("%s %s: the answer names team/other, which the request did not: %s", c.method, c.path, r.body)
		}
	}
	// A crafted cursor pages through the caller's own project only.
	r = s.call(t, "GET", "/api/v1/entries?cursor="+b64("a"), auth, "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"project":"team/backend","slug":"notes/a"`) || strings.Count(r.body, `"slug"`) != 2 {
		t.Errorf("list from cursor \"a\": %d %s; want team/backend's two entries", r.status, r.body)
	}
	// A recall across all the caller's projects finds its own entry only.
	r = s.call(t, "GET", "/api/v1/recall?q=kumquat", auth, "")
	if r.status != http.StatusOK || strings.Count(r.body, `"slug"`) != 1 || !strings.Contains(r.body, `"project":"team/backend","slug":"notes/a"`) {
		t.Errorf("recall across A,B: %d %s; want notes/a of team/backend only", r.status, r.body)
	}
	// team/other is as it was: two entries, each version 1.
	r = s.call(t, "GET", "/api/v1/entries", bearer(other), "")
	if r.status != http.StatusOK || strings.Count(r.body, `"version":1,`) != 2 || strings.Count(r.body, `"slug"`) != 2 {
		t.Fatalf("team/other changed: %d %s", r.status, r.body)
	}
	if r = s.call(t, "GET", "/api/v1/entries/secret/plan", bearer(other), ""); !strings.Contains(r.body, "kumquat zeppelin from the other team") {
		t.Fatalf("team/other's entry changed: %s", r.body)
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// jsonField returns the string field name of the JSON object body.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	s, _ := m[name].(string)
	return s
}
