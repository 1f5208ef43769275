package httpserver

import (
	"net/http"
	"strings"
	"testing"
)

// TestLoggedPathsRedactKeys: a key pasted into a URL path — of the web UI,
// the REST API, a route that panics — is logged as munin_[redacted].
func TestLoggedPathsRedactKeys(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/boom/") {
			panic("boom")
		}
		http.NotFound(w, r)
	})
	s := newStack(t, Config{Web: web}, nil, nil)
	s.serve(t)
	secret := strings.TrimPrefix(s.token, "munin_")
	for _, path := range []string{"/w/ws/proj/" + s.token, "/api/v1/entries/notes/" + s.token, "/boom/" + s.token, "/mcp/" + s.token} {
		req, _ := http.NewRequest("GET", s.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	logs := s.log.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("a key reached the log:\n%s", logs)
	}
	for _, want := range []string{"path=/w/ws/proj/munin_[redacted]", "path=/api/v1/entries/notes/munin_[redacted]", "path=/boom/munin_[redacted]", "panic serving request"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}
