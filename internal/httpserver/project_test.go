package httpserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"munin/internal/memory"
)

// route is one REST call; body "" for GET and DELETE.
type route struct{ method, path, body string }

// routesIn is every REST route of /api/v1 that acts in a project, aimed at
// project (the query parameter on GET and DELETE, the body field on POST
// and PUT; "" sends none), on slug.
func routesIn(project, slug string) []route {
	q, field := "", ""
	if project != "" {
		q = "project=" + url.QueryEscape(project)
		field = `"project":` + jsonString(project) + `,`
	}
	with := func(path, more string) string {
		switch {
		case q == "" && more == "":
			return path
		case q == "":
			return path + "?" + more
		case more == "":
			return path + "?" + q
		}
		return path + "?" + q + "&" + more
	}
	return []route{
		{"POST", "/api/v1/entries", `{` + field + `"slug":` + jsonString(slug) + `,"content":"kumquat overwritten"}`},
		{"GET", with("/api/v1/entries", ""), ""},
		{"GET", with("/api/v1/entries/"+slug, ""), ""},
		{"GET", with("/api/v1/history/"+slug, ""), ""},
		{"GET", with("/api/v1/recall", "q=kumquat"), ""},
		{"POST", "/api/v1/recall", `{` + field + `"query":"kumquat"}`},
		{"PUT", "/api/v1/project/budget", `{` + field + `"writes_per_hour":0}`},
		{"DELETE", with("/api/v1/entries/"+slug, ""), ""},
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestProjectOnEveryRoute: every route takes project. One the caller holds
// no key for is 403 "no key for project …", the same answer whether the
// project exists or not; a malformed one is 400 invalid naming the field;
// one it holds a key for works, and answers carry it. An unknown parameter
// or field is still refused.
func TestProjectOnEveryRoute(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleAdmin)
	other, _ := s.env.Key(t, "team", "other", "agent-o", memory.RoleAdmin)
	if r := s.call(t, "POST", "/api/v1/entries", bearer(other), `{"slug":"secret/plan","content":"kumquat secret"}`); r.status != http.StatusCreated {
		t.Fatalf("seed: %d %s", r.status, r.body)
	}
	auth := bearer(a, b)

	existing := routesIn("team/other", "secret/plan")
	missing := routesIn("acme/x", "secret/plan")
	for i, rt := range existing {
		r1 := s.call(t, rt.method, rt.path, auth, rt.body)
		r2 := s.call(t, missing[i].method, missing[i].path, auth, missing[i].body)
		if r1.status != http.StatusForbidden || r1.body != errorBody("forbidden", "no key for project team/other") {
			t.Errorf("%s %s: %d %s; want 403 no key for project team/other", rt.method, rt.path, r1.status, r1.body)
		}
		if r2.status != r1.status || r2.body != strings.ReplaceAll(r1.body, "team/other", "acme/x") {
			t.Errorf("%s %s: an existing and a missing project are told apart: %d %s / %d %s", rt.method, rt.path, r1.status, r1.body, r2.status, r2.body)
		}
	}

	for _, bad := range []string{"ACME/x", "a", "a/b/c", strings.Repeat("a", 200), "/x", "team/", "team/other/"} {
		for _, rt := range routesIn(bad, "notes/x") {
			r := s.call(t, rt.method, rt.path, auth, rt.body)
			if r.status != http.StatusBadRequest || !strings.HasPrefix(r.body, `{"error":{"code":"invalid","message":"project \"`) {
				t.Errorf("%s %s: %d %s; want 400 invalid naming project", rt.method, rt.path, r.status, r.body)
			}
		}
	}

	// The project held, on every route: each answer is the route's success,
	// and names team/shared where it names a project.
	want := []int{http.StatusCreated, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusNoContent, http.StatusOK}
	for i, rt := range routesIn("team/shared", "notes/x") {
		r := s.call(t, rt.method, rt.path, auth, rt.body)
		if r.status != want[i] || strings.Contains(r.body, "team/backend") || strings.Contains(r.body, "team/other") {
			t.Fatalf("%s %s: %d %s; want %d in team/shared", rt.method, rt.path, r.status, r.body, want[i])
		}
		if r.status != http.StatusNoContent && !strings.Contains(r.body, `"project":"team/shared"`) {
			t.Errorf("%s %s: the answer does not name team/shared: %s", rt.method, rt.path, r.body)
		}
	}
	// Without project, the first key's project (recall: all of them).
	if r := s.call(t, "POST", "/api/v1/entries", auth, `{"slug":"notes/y","content":"kumquat in backend"}`); !strings.HasPrefix(r.body, `{"project":"team/backend",`) {
		t.Fatalf("remember without project: %d %s", r.status, r.body)
	}

	// An unknown query parameter or body field is still refused, next to project.
	for _, rt := range routesIn("team/shared", "notes/x") {
		path, body := rt.path+"&projekt=x", rt.body
		if body != "" {
			path, body = rt.path, strings.Replace(body, `"project"`, `"projekt":"x","project"`, 1)
		}
		r := s.call(t, rt.method, path, auth, body)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `\"projekt\"`) {
			t.Errorf("%s %s %s: %d %s; want 400 naming projekt", rt.method, path, body, r.status, r.body)
		}
	}
	// A project twice is refused, as any repeated parameter.
	if r := s.call(t, "GET", "/api/v1/entries?project=team/shared&project=team/backend", auth, ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, `\"project\" is given 2 times`) {
		t.Errorf("project given twice: %d %s", r.status, r.body)
	}
}

// TestMe: GET /api/v1/me names the projects of the caller's keys with role
// and agent, the first key first; a server-admin key reaches none and says
// so. It takes no parameters.
func TestMe(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	aRead, _ := s.env.Key(t, "team", "backend", "agent-r", memory.RoleRead)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleAdmin)
	admin, _, err := s.env.Svc.CreateServerAdminKey(t.Context(), "root")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, auth, want string }{
		{"one key", bearer(b), `{"projects":[{"project":"team/shared","role":"admin","agent":"agent-b"}]}`},
		{"two keys", bearer(a, b), `{"projects":[{"project":"team/backend","role":"write","agent":"agent-a"},{"project":"team/shared","role":"admin","agent":"agent-b"}]}`},
		// Two keys for one project: the higher role, in the first one's place.
		{"two keys for one project", bearer(aRead, b, a), `{"projects":[{"project":"team/backend","role":"write","agent":"agent-a"},{"project":"team/shared","role":"admin","agent":"agent-b"}]}`},
		{"server admin", bearer(admin), `{"projects":[],"server_admin":true}`},
	} {
		r := s.call(t, "GET", "/api/v1/me", tc.auth, "")
		if r.status != http.StatusOK || r.body != tc.want+"\n" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %s; want %s", tc.name, r.status, r.body, tc.want)
		}
	}
	for _, path := range []string{"/api/v1/me?project=team/backend", "/api/v1/me?x=1"} {
		if r := s.call(t, "GET", path, bearer(a), ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, "this endpoint takes none") {
			t.Errorf("GET %s: %d %s; want 400", path, r.status, r.body)
		}
	}
	if r := s.call(t, "GET", "/api/v1/me", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/me without a key: %d %s", r.status, r.body)
	}
	if r := s.call(t, "POST", "/api/v1/me", bearer(a), `{}`); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/v1/me: %d %s", r.status, r.body)
	}
}
