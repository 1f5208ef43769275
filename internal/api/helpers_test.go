package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// fixture is the REST API over the real stack, with keys of each role in one project.
type fixture struct {
	env   *servicetest.Env
	h     http.Handler
	read  memory.Caller
	write memory.Caller
	admin memory.Caller
}

func newFixture(t *testing.T, opts service.Options) *fixture {
	t.Helper()
	env := servicetest.New(t, opts)
	f := &fixture{env: env, h: api.New(env.Svc)}
	_, f.read = env.Key(t, "ws", "proj", "reader", memory.RoleRead)
	_, f.write = env.Key(t, "ws", "proj", "writer", memory.RoleWrite)
	_, f.admin = env.Key(t, "ws", "proj", "boss", memory.RoleAdmin)
	return f
}

// req is one request; the authentication middleware is stood in for by
// putting the caller in the context, as httpserver does.
type req struct {
	method string
	path   string
	body   string // sent as application/json unless ctype is set
	ctype  string // "-" sends no Content-Type
	header map[string]string
	key    *memory.Caller
}

func (f *fixture) do(t *testing.T, rq req) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	r := httptest.NewRequest(rq.method, rq.path, body)
	switch {
	case rq.ctype == "-":
	case rq.ctype != "":
		r.Header.Set("Content-Type", rq.ctype)
	case rq.body != "":
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	if rq.key != nil {
		r = r.WithContext(service.WithCaller(r.Context(), *rq.key))
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

// decode reads a JSON response into a map after checking the status.
func decode(t *testing.T, w *httptest.ResponseRecorder, wantStatus int) map[string]any {
	t.Helper()
	if w.Code != wantStatus {
		t.Fatalf("status %d, want %d; body %s", w.Code, wantStatus, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("decode %s: %v", w.Body.String(), err)
	}
	return m
}

// errorOf checks an error response and returns its code and message.
func errorOf(t *testing.T, w *httptest.ResponseRecorder, wantStatus int) (string, string) {
	t.Helper()
	m := decode(t, w, wantStatus)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", w.Body.String())
	}
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if code == "" || msg == "" {
		t.Fatalf("error without code or message: %s", w.Body.String())
	}
	return code, msg
}

func jsonBody(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
