package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/service"
)

// TestOverloadIsRefusedAtOnce fills the in-flight limit with requests that
// block, then sends more: the excess gets 429 with Retry-After at once, the
// probes still answer, and the accepted requests complete normally.
func TestOverloadIsRefusedAtOnce(t *testing.T) {
	const limit = 4 // two per project
	release := make(chan struct{})
	entered := make(chan struct{}, limit)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	m := metrics.New()
	s := newStack(t, Config{MaxInFlight: limit, Metrics: m}, blocking, nil)
	second, _ := s.env.Key(t, "ws", "second", "agent-2", memory.RoleWrite)
	third, _ := s.env.Key(t, "ws", "third", "agent-3", memory.RoleWrite)
	s.serve(t)

	var wg sync.WaitGroup
	statuses := make(chan int, limit)
	for i := 0; i < limit; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- s.postAs(t, []string{s.token, second}[i%2], "/mcp", `{}`)
		}()
	}
	for i := 0; i < limit; i++ {
		<-entered
	}

	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+third)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("request over the limit: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if code := errorCode(t, body); code != "unavailable" || !strings.Contains(string(body), "limit of 4 requests in flight") {
			t.Fatalf("429 body %s", body)
		}
	}
	if resp, err := client.Get(s.base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz under overload: %v %v", resp, err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{"munin_http_overload_rejections_total 5", "munin_http_requests_in_flight 4"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	close(release)
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("an accepted request ended with %d", st)
		}
	}
	// With the slots free again, requests are accepted.
	done := make(chan int, 1)
	go func() { done <- s.post(t, "/mcp", `{}`) }()
	<-entered
	select {
	case st := <-done:
		if st != 200 {
			t.Fatalf("after the overload: %d", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request after the overload never finished")
	}
}

func (s *stack) post(t *testing.T, path, body string) int { return s.postAs(t, s.token, path, body) }

func (s *stack) postAs(t *testing.T, token, path, body string) int {
	req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestReadyzDuringShutdown: ready while serving, 503 once shutdown began.
func TestReadyzDuringShutdown(t *testing.T) {
	s := newStack(t, Config{}, nil, nil)
	s.serve(t)
	resp, err := client.Get(s.base + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	h := s.srv.Handler
	go s.srv.Shutdown(t.Context())
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/readyz", nil)
		req.Host = "127.0.0.1"
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusServiceUnavailable {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("readyz still ready after shutdown began")
}

// TestInFlightGaugeWithAndWithoutLimit: requests in flight are counted
// whether or not admission control limits them (--max-inflight -1).
func TestInFlightGaugeWithAndWithoutLimit(t *testing.T) {
	for _, limit := range []int{64, -1} {
		m := metrics.New()
		var during string
		l := newLimits(8, -1, -1, limit)
		inner := limitPerKey(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			for _, line := range strings.Split(rec.Body.String(), "\n") {
				if strings.HasPrefix(line, "munin_http_requests_in_flight ") {
					during = line
				}
			}
		}))
		h := admitAnonymous(l, m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), memory.NewCaller(memory.Key{ID: 1}))))
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/v1/entries", nil))
		if during != "munin_http_requests_in_flight 1" {
			t.Errorf("limit %d: while serving, %q; want munin_http_requests_in_flight 1", limit, during)
		}
	}
}
