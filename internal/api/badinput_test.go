package api_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
)

// TestBadInput: every bad request gets the right status, a message naming the
// problem, and changes nothing (invariant 6,
// docs/architecture.md#invariant-6-bad-input-changes-nothing).
func TestBadInput(t *testing.T) {
	f := newFixture(t, service.Options{})
	big := strings.Repeat("x", memory.DefaultMaxContent+1)
	cases := []struct {
		name    string
		rq      req
		status  int
		mention string // the message must contain this
	}{
		{"invalid JSON", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a",`}, 400, "truncated"},
		{"syntax error", req{method: "POST", path: "/api/v1/entries", body: `{"slug" "a"}`}, 400, "not valid JSON"},
		{"empty body", req{method: "POST", path: "/api/v1/entries", ctype: "application/json"}, 400, "empty"},
		{"not an object", req{method: "POST", path: "/api/v1/entries", body: `["a"]`}, 400, "JSON object"},
		{"two values", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x"} {"slug":"b"}`}, 400, "exactly one JSON value"},
		{"unknown field", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x","colour":"red"}`}, 400, `"colour"`},
		{"wrong type string", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":42}`}, 400, `"content" must be a string`},
		{"wrong type tags", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x","tags":"db"}`}, 400, `"tags"`},
		{"wrong type expected_version", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x","expected_version":"1"}`}, 400, `"expected_version" must be an integer`},
		{"bad slug", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"Bad Slug!","content":"x"}`}, 400, "slug"},
		{"dotdot slug in body", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a/../b","content":"x"}`}, 400, "'..'"},
		{"dotdot slug in path", req{method: "GET", path: "/api/v1/entries/a/../b"}, 400, "'..'"},
		{"dotdot slug delete", req{method: "DELETE", path: "/api/v1/entries/a/../../etc"}, 400, "'..'"},
		{"empty content", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"  "}`}, 400, "content"},
		{"oversized content", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"` + big + `"}`}, 413, "content"},
		{"bad tag", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x","tags":["no spaces"]}`}, 400, "tag"},
		{"missing content type", req{method: "POST", path: "/api/v1/entries", body: `{"slug":"a","content":"x"}`, ctype: "-"}, 415, "Content-Type"},
		{"wrong content type", req{method: "POST", path: "/api/v1/entries", body: `slug=a`, ctype: "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"query on POST", req{method: "POST", path: "/api/v1/entries?slug=a", body: `{"slug":"a","content":"x"}`}, 400, `"slug"`},
		{"limit=abc", req{method: "GET", path: "/api/v1/entries?limit=abc"}, 400, "limit"},
		{"limit too big", req{method: "GET", path: "/api/v1/entries?limit=100000"}, 400, "limit"},
		{"unknown param", req{method: "GET", path: "/api/v1/entries?limt=5"}, 400, `"limt"`},
		{"repeated param", req{method: "GET", path: "/api/v1/entries?limit=1&limit=2"}, 400, `"limit"`},
		{"version=abc", req{method: "GET", path: "/api/v1/entries/a?version=abc"}, 400, "version"},
		{"version=0", req{method: "GET", path: "/api/v1/entries/a?version=0"}, 400, "version"},
		{"history limit=-1", req{method: "GET", path: "/api/v1/history/a?limit=-1"}, 400, "limit"},
		{"expected_version=x", req{method: "DELETE", path: "/api/v1/entries/a?expected_version=x"}, 400, "expected_version"},
		{"empty recall", req{method: "GET", path: "/api/v1/recall?q="}, 400, "query"},
		{"recall limit=abc", req{method: "GET", path: "/api/v1/recall?q=x&limit=abc"}, 400, "limit"},
		{"recall bad tag", req{method: "POST", path: "/api/v1/recall", body: `{"query":"x","tags":["a b"]}`}, 400, "tag"},
		{"recall wrong type", req{method: "POST", path: "/api/v1/recall", body: `{"query":"x","limit":"ten"}`}, 400, `"limit"`},
		{"project ACME/x", req{method: "GET", path: "/api/v1/entries?project=ACME/x"}, 400, `project "ACME/x"`},
		{"project a", req{method: "POST", path: "/api/v1/entries", body: `{"project":"a","slug":"a","content":"x"}`}, 400, `project "a"`},
		{"project a/b/c", req{method: "GET", path: "/api/v1/recall?q=x&project=a/b/c"}, 400, `project "a/b/c"`},
		{"project 200 characters", req{method: "PUT", path: "/api/v1/project/budget", body: `{"project":"` + strings.Repeat("p", 200) + `","writes_per_hour":1}`}, 400, `project "ppp`},
		{"project wrong type", req{method: "POST", path: "/api/v1/recall", body: `{"query":"x","project":["ws/proj"]}`}, 400, `"project" must be a string`},
		{"project on GET /me", req{method: "GET", path: "/api/v1/me?project=ws/proj"}, 400, `"project"`},
		{"budget wrong type", req{method: "PUT", path: "/api/v1/project/budget", body: `{"writes_per_hour":"lots"}`}, 400, `"writes_per_hour"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rq := tc.rq
			rq.key = &f.admin
			_, msg := errorOf(t, f.do(t, rq), tc.status)
			if !strings.Contains(msg, tc.mention) {
				t.Errorf("message %q does not mention %q", msg, tc.mention)
			}
		})
	}
	m := decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries", key: &f.read}), http.StatusOK)
	if es := m["entries"].([]any); len(es) != 0 {
		t.Fatalf("bad input wrote something: %v", m)
	}
	used, _, err := f.env.Svc.WriteUsage(t.Context(), f.admin.First().Project)
	if err != nil || used != 0 {
		t.Fatalf("bad input used the write budget: %d, %v", used, err)
	}
}

func TestStatusOf(t *testing.T) {
	for code, want := range map[memory.Code]int{
		memory.CodeInvalid:         400,
		memory.CodeNotFound:        404,
		memory.CodeConflict:        409,
		memory.CodeForbidden:       403,
		memory.CodeUnauthorized:    401,
		memory.CodeBudgetExhausted: 429,
		memory.CodeTooLarge:        413,
		memory.CodeUnavailable:     503,
		memory.CodeInternal:        500,
		memory.Code("new-code"):    500,
	} {
		if got := api.StatusOf(code); got != want {
			t.Errorf("StatusOf(%s) = %d, want %d", code, got, want)
		}
	}
}

// TestInternalDetailsHidden: the cause of an internal error is never sent.
func TestInternalDetailsHidden(t *testing.T) {
	for _, err := range []error{
		memory.Internal(errors.New("open /secret/path.db: disk full")),
		errors.New("open /secret/path.db: disk full"),
	} {
		w := httptest.NewRecorder()
		api.WriteError(w, err)
		if w.Code != 500 || strings.Contains(w.Body.String(), "secret") ||
			w.Body.String() != `{"error":{"code":"internal","message":"internal error"}}`+"\n" {
			t.Errorf("%d %s", w.Code, w.Body.String())
		}
	}
}
