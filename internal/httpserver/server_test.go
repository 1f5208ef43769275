package httpserver

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestOrigin(t *testing.T) {
	s := newStack(t, Config{AllowedOrigins: []string{"https://app.example/"}}, nil, nil)
	cases := []struct {
		name, host, origin string
		want               int
	}{
		{"no origin", "munin.example:8080", "", 200},
		{"same host", "munin.example:8080", "http://munin.example:8080", 200},
		{"same host, other case", "Munin.Example:8080", "http://munin.example:8080", 200},
		{"localhost other port", "munin.example:8080", "http://localhost:3000", 200},
		{"127.0.0.1 other port", "munin.example:8080", "http://127.0.0.1:5173", 200},
		{"ipv6 loopback", "munin.example:8080", "http://[::1]:9999", 200},
		{"configured origin", "munin.example:8080", "https://app.example", 200},
		{"evil", "munin.example:8080", "http://evil.example", 403},
		{"evil with our port", "munin.example:8080", "http://evil.example:8080", 403},
		{"configured host, other scheme", "munin.example:8080", "http://app.example", 403},
		{"lookalike localhost", "munin.example:8080", "http://localhost.evil.example", 403},
		{"null origin", "munin.example:8080", "null", 403},
		{"garbage", "munin.example:8080", "::not a url", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/mcp", nil)
			r.Host = tc.host
			r.Header.Set("Authorization", "Bearer "+s.token)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			w := httptest.NewRecorder()
			s.srv.Handler.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body.String())
			}
			if tc.want == 403 && errorCode(t, w.Body.Bytes()) != "forbidden" {
				t.Fatal(w.Body.String())
			}
		})
	}
}

// TestHostOnLoopback: a DNS-rebinding page sends its own name as Host and
// Origin; a server on loopback must refuse it although Origin == Host.
func TestHostOnLoopback(t *testing.T) {
	s := newStack(t, Config{AllowedOrigins: []string{"http://munin.local:8080"}}, nil, nil)
	s.serve(t)
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 200}, // the real 127.0.0.1:port
		{"localhost:1234", "", 200},
		{"evil.example:8080", "http://evil.example:8080", 403},
		{"evil.example:8080", "", 403},
		{"munin.local:8080", "http://munin.local:8080", 200},
	} {
		r, _ := http.NewRequest("GET", s.base+"/healthz", nil)
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q Origin %q: %d, want %d", tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
}

// countingReader notices whether anybody read the body.
type countingReader struct {
	n     atomic.Int64
	limit int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	left := c.limit - c.n.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	for i := range p {
		p[i] = 'x'
	}
	c.n.Add(int64(len(p)))
	return len(p), nil
}

func TestBodyCapContentLength(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	for _, path := range []string{"/mcp", "/api/v1/entries", "/healthz"} {
		body := &countingReader{limit: 2 << 20}
		r := httptest.NewRequest("POST", path, body)
		r.ContentLength = 2 << 20
		r.Header.Set("Authorization", "Bearer "+s.token)
		w := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge || errorCode(t, w.Body.Bytes()) != "too_large" {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
		if n := body.n.Load(); n != 0 {
			t.Fatalf("%s: %d bytes read before refusing", path, n)
		}
	}
}

func TestBodyCapChunked(t *testing.T) {
	s := newStack(t, Config{MaxBodyBytes: 1 << 20}, nil, nil)
	s.serve(t)
	for _, tc := range []struct {
		path string
		size int64
		want int
	}{
		{"/mcp", 2 << 20, 413},
		{"/api/v1/entries", 2 << 20, 413},
		{"/mcp", 1<<20 + 1, 413},
		{"/mcp", 1 << 20, 200}, // exactly the cap is fine
		{"/api/v1/entries", 1000, 200},
	} {
		// A reader of unknown length makes the client send chunked.
		r, _ := http.NewRequest("POST", s.base+tc.path, io.MultiReader(&countingReader{limit: tc.size}))
		r.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s %d: %v", tc.path, tc.size, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("%s %d bytes: %d, want %d: %s", tc.path, tc.size, resp.StatusCode, tc.want, body)
		}
		if tc.want == 413 {
			if errorCode(t, body) != "too_large" {
				t.Fatal(string(body))
			}
			continue
		}
		var got struct {
			Body int64
			TE   []string
		}
		if err := json.Unmarshal(body, &got); err != nil || got.Body != tc.size {
			t.Fatalf("inner handler read %d bytes, want %d (%v)", got.Body, tc.size, err)
		}
		if len(got.TE) == 0 || got.TE[0] != "chunked" {
			t.Fatalf("the request was not chunked: %v", got.TE)
		}
	}
}

func TestAuth(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	revokedToken, revoked := s.env.Key(t, "ws", "proj", "gone", "read")
	if err := s.env.Svc.RevokeKey(t.Context(), revoked.First().ID); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/mcp", "/api/v1/entries"} {
		for _, tc := range []struct{ name, header string }{
			{"no header", ""},
			{"basic", "Basic dXNlcjpwYXNz"},
			{"bare token", s.token},
			{"empty bearer", "Bearer "},
			{"wrong key", "Bearer munin_0000000000000000000000000000000000"},
			{"not a munin key", "Bearer abc"},
			{"revoked key", "Bearer " + revokedToken},
		} {
			r := httptest.NewRequest("GET", path, nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			s.srv.Handler.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Bearer realm="munin"` ||
				errorCode(t, w.Body.Bytes()) != "unauthorized" {
				t.Errorf("%s %s: %d %q %s", path, tc.name, w.Code, w.Header().Get("WWW-Authenticate"), w.Body.String())
			}
		}
		for _, scheme := range []string{"Bearer ", "bearer "} {
			r := httptest.NewRequest("GET", path, nil)
			r.Header.Set("Authorization", scheme+s.token)
			w := httptest.NewRecorder()
			s.srv.Handler.ServeHTTP(w, r)
			var got struct{ Agent, Project string }
			if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Agent != "agent-1" || got.Project != "ws/proj" {
				t.Errorf("%s good key (%q): %d %s", path, scheme, w.Code, w.Body.String())
			}
		}
	}
	// healthz needs no key
	w := httptest.NewRecorder()
	s.srv.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	if w.Code != 200 || w.Body.String() != "ok\n" {
		t.Fatalf("healthz: %d %q", w.Code, w.Body.String())
	}
}

func TestPanic(t *testing.T) {
	boom := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			panic("boom: secret detail")
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("half an answer"))
		panic(errors.New("late boom"))
	})
	s := newStack(t, Config{}, boom, nil)
	s.serve(t)
	for i := 0; i < 2; i++ {
		r, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader("{}"))
		r.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || string(body) != `{"error":{"code":"internal","message":"internal error"}}`+"\n" {
			t.Fatalf("panic answer: %d %s", resp.StatusCode, body)
		}
	}
	// A panic after the headers went out cuts the connection instead of
	// passing half an answer off as a whole one.
	r, _ := http.NewRequest("GET", s.base+"/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+s.token)
	if resp, err := client.Do(r); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Error("late panic: the response ended normally")
		}
	}
	// still serving
	resp, err := client.Get(s.base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after panic: %v %v", resp, err)
	}
	resp.Body.Close()
	logs := s.log.String()
	if !strings.Contains(logs, "panic serving request") || !strings.Contains(logs, "stack=") || !strings.Contains(logs, "secret detail") {
		t.Fatalf("panic not logged with its stack:\n%s", logs)
	}
	if !strings.Contains(logs, "status=500") {
		t.Fatalf("request log lacks status=500:\n%s", logs)
	}
}

// TestLogNeverContainsToken: the request log shows who called, never the
// key, whether it came in the header, the query string or the body.
func TestLogNeverContainsToken(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	s.serve(t)
	send := func(method, path, auth, body string) {
		r, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send("POST", "/mcp", "Bearer "+s.token, `{"token":"`+s.token+`"}`)
	send("GET", "/api/v1/entries?key="+s.token, "Bearer "+s.token, "")
	send("GET", "/api/v1/entries?access_token="+s.token, "", "")
	send("GET", "/mcp", "Basic "+s.token, "")
	send("GET", "/mcp", "Bearer "+s.token+"x", "")
	send("POST", "/nope?token="+s.token, "Bearer "+s.token, s.token)

	logs := s.log.String()
	// Not even the start of the key: the refusals are logged by their
	// reason ("missing key: send Authorization: Bearer munin_…"), never
	// with what was sent.
	secret := strings.TrimPrefix(s.token, "munin_")
	if strings.Contains(logs, secret[:8]) {
		t.Fatalf("the log contains the key:\n%s", logs)
	}
	for _, want := range []string{"path=/mcp", "status=200", "status=401", "agent=agent-1", "project=ws/proj", "duration_ms=", "bytes="} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
}

func TestRootAndNotFound(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	w := httptest.NewRecorder()
	s.srv.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "/mcp") {
		t.Fatalf("/: %d %s", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	s.srv.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/nope", nil))
	if w.Code != 404 || errorCode(t, w.Body.Bytes()) != "not_found" {
		t.Fatalf("/nope: %d %s", w.Code, w.Body.String())
	}
}

func TestDefaults(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	if s.srv.Addr != DefaultAddr || s.srv.ReadHeaderTimeout == 0 || s.srv.ReadTimeout == 0 ||
		s.srv.IdleTimeout == 0 || s.srv.MaxHeaderBytes != 64<<10 {
		t.Fatalf("%+v", s.srv)
	}
}
