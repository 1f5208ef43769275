package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestPutSimilar: PUT /project/similar {project, similar} answers 204 for
// an admin; a bad value is 400 invalid naming the allowed values, a write
// key is 403, an unknown field is 400 — and none of those changes the
// setting.
func TestPutSimilar(t *testing.T) {
	f := newFixture(t, service.Options{})
	ref := memory.ProjectRef{Workspace: "ws", Project: "proj"}
	setting := func() string {
		t.Helper()
		v, err := f.env.Svc.ProjectSimilar(context.Background(), f.read, ref)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if rec := f.do(t, req{method: "PUT", path: "/api/v1/project/similar", key: &f.admin, body: `{"project":"ws/proj","similar":"off"}`}); rec.Code != http.StatusNoContent {
		t.Fatalf("PUT /project/similar: %d %s", rec.Code, rec.Body.String())
	}
	if got := setting(); got != memory.SimilarOff {
		t.Fatalf("similar after the PUT: %q, want off", got)
	}
	refused := []struct {
		name   string
		key    *memory.Caller
		body   string
		status int
		code   string
		says   string
	}{
		{"bad value", &f.admin, `{"similar":"sometimes"}`, http.StatusBadRequest, "invalid", "on or off"},
		{"no value", &f.admin, `{"project":"ws/proj"}`, http.StatusBadRequest, "invalid", "on or off"},
		{"review's field", &f.admin, `{"review":"on"}`, http.StatusBadRequest, "invalid", "review"},
		{"write key", &f.write, `{"similar":"on"}`, http.StatusForbidden, "forbidden", "admin key"},
		{"read key", &f.read, `{"similar":"on"}`, http.StatusForbidden, "forbidden", "admin key"},
		{"project of no key", &f.admin, `{"project":"ws/elsewhere","similar":"on"}`, http.StatusForbidden, "forbidden", "ws/elsewhere"},
	}
	for _, c := range refused {
		code, msg := errorOf(t, f.do(t, req{method: "PUT", path: "/api/v1/project/similar", key: c.key, body: c.body}), c.status)
		if code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %s %q; want %s naming %q", c.name, code, msg, c.code, c.says)
		}
		if got := setting(); got != memory.SimilarOff {
			t.Fatalf("%s changed the setting to %q", c.name, got)
		}
	}
	if rec := f.do(t, req{method: "PUT", path: "/api/v1/project/similar", key: &f.admin, body: `{"similar":"on"}`}); rec.Code != http.StatusNoContent {
		t.Fatalf("PUT /project/similar on: %d %s", rec.Code, rec.Body.String())
	}
	if got := setting(); got != memory.SimilarOn {
		t.Errorf("similar after the second PUT: %q, want on", got)
	}
}
