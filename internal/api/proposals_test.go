package api_test

import (
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestProposalRoutes: a propose key's POST /entries answers pending; the
// admin lists, reads, approves (once) and rejects over REST; a write key
// with review on is forbidden to approve; the review setting is a PUT.
func TestProposalRoutes(t *testing.T) {
	f := newFixture(t, service.Options{})
	_, pia := f.env.Key(t, "ws", "proj", "pia", memory.RolePropose)
	m := decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &pia, body: `{"slug":"a","content":"proposed text"}`}), http.StatusCreated)
	id, _ := m["proposal"].(string)
	if m["state"] != "pending" || id == "" || m["base_version"] != 0.0 || m["version"] != nil || m["created_at"] == nil {
		t.Fatalf("proposing POST /entries answered %v", m)
	}
	list := decode(t, f.do(t, req{method: "GET", path: "/api/v1/proposals?state=pending", key: &f.admin}), http.StatusOK)
	if ps, _ := list["proposals"].([]any); len(ps) != 1 || list["next_cursor"] != "" {
		t.Fatalf("GET /proposals: %v", list)
	}
	d := decode(t, f.do(t, req{method: "GET", path: "/api/v1/proposals/" + id, key: &f.admin}), http.StatusOK)
	if p, _ := d["proposal"].(map[string]any); p["content"] != "proposed text" || p["agent"] != "pia" {
		t.Errorf("GET /proposals/{id}: %v", d)
	}
	f.do(t, req{method: "PUT", path: "/api/v1/project/review", key: &f.write, body: `{"review":"agents"}`})
	if rec := f.do(t, req{method: "PUT", path: "/api/v1/project/review", key: &f.admin, body: `{"review":"agents"}`}); rec.Code != http.StatusNoContent {
		t.Fatalf("PUT /project/review: %d %s", rec.Code, rec.Body.String())
	}
	errorOf(t, f.do(t, req{method: "PUT", path: "/api/v1/project/review", key: &f.admin, body: `{"review":"maybe"}`}), http.StatusBadRequest)
	if code, msg := errorOf(t, f.do(t, req{method: "POST", path: "/api/v1/proposals/" + id + "/approve", key: &f.write}), http.StatusForbidden); code != "forbidden" || !strings.Contains(msg, "admin key") {
		t.Errorf("write key approves: %s %s", code, msg)
	}
	w := decode(t, f.do(t, req{method: "POST", path: "/api/v1/proposals/" + id + "/approve", key: &f.admin}), http.StatusOK)
	if w["version"] != 1.0 || w["proposal"] != id {
		t.Errorf("approve answered %v", w)
	}
	if code, _ := errorOf(t, f.do(t, req{method: "POST", path: "/api/v1/proposals/" + id + "/approve", key: &f.admin, body: `{}`}), http.StatusConflict); code != "conflict" {
		t.Errorf("approve twice: %s", code)
	}
	e := decode(t, f.do(t, req{method: "GET", path: "/api/v1/entries/a", key: &f.read}), http.StatusOK)
	if e["agent"] != "pia" || e["version"] != 1.0 {
		t.Errorf("approved entry %v", e)
	}

	m = decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &pia, body: `{"slug":"b","content":"second"}`}), http.StatusCreated)
	id2, _ := m["proposal"].(string)
	errorOf(t, f.do(t, req{method: "POST", path: "/api/v1/proposals/" + id2 + "/reject", key: &f.admin, body: `{}`}), http.StatusBadRequest)
	r := decode(t, f.do(t, req{method: "POST", path: "/api/v1/proposals/" + id2 + "/reject", key: &f.admin, body: `{"reason":"duplicate of a"}`}), http.StatusOK)
	if r["state"] != "rejected" || r["reason"] != "duplicate of a" {
		t.Errorf("reject answered %v", r)
	}
	mine := decode(t, f.do(t, req{method: "GET", path: "/api/v1/proposals?state=rejected", key: &pia}), http.StatusOK)
	if ps, _ := mine["proposals"].([]any); len(ps) != 1 {
		t.Errorf("pia's rejected proposals: %v", mine)
	}
}

// TestProposalOfAnotherProjectIs404: an id of a project the caller holds no
// key for answers exactly as an id that does not exist
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func TestProposalOfAnotherProjectIs404(t *testing.T) {
	f := newFixture(t, service.Options{})
	_, pia := f.env.Key(t, "ws", "proj", "pia", memory.RolePropose)
	_, stranger := f.env.Key(t, "ws", "elsewhere", "sam", memory.RoleAdmin)
	m := decode(t, f.do(t, req{method: "POST", path: "/api/v1/entries", key: &pia, body: `{"slug":"a","content":"x"}`}), http.StatusCreated)
	id, _ := m["proposal"].(string)
	missing := "ws.proj.987654"
	for _, path := range []string{"", "/approve", "/reject"} {
		method, body := "POST", `{"reason":"r"}`
		switch path {
		case "":
			method, body = "GET", ""
		case "/approve":
			body = `{}`
		}
		_, msgOther := errorOf(t, f.do(t, req{method: method, path: "/api/v1/proposals/" + id + path, key: &stranger, body: body}), http.StatusNotFound)
		_, msgMissing := errorOf(t, f.do(t, req{method: method, path: "/api/v1/proposals/" + missing + path, key: &stranger, body: body}), http.StatusNotFound)
		if msgOther != strings.ReplaceAll(msgMissing, missing, id) {
			t.Errorf("%s %s: %q for another project's id, %q for a missing one", method, path, msgOther, msgMissing)
		}
	}
	errorOf(t, f.do(t, req{method: "GET", path: "/api/v1/proposals/not-an-id", key: &f.admin}), http.StatusNotFound)
}
