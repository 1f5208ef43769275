package httpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// A 429 the handler answers itself (a write over its budget) is held back
// like a refusal of the key limits, without its admission slot: another
// key is served meanwhile even with a server-wide limit of one request.
// Other answers go out at once.
func TestHandlerRefusalIsHeldWithoutItsSlot(t *testing.T) {
	l := newLimits(-1, 1000, time.Second, 1) // one request in flight on the server, a rate never reached
	over := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") == "a" {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"budget_exhausted"}}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	h := admitAnonymous(l, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := memory.Key{ID: 1, Agent: "a"}
		if r.Header.Get("X-Key") == "b" {
			key = memory.Key{ID: 2, Agent: "b"}
		}
		limitPerKey(l, holdHandlerRefusals(l, over)).ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), memory.NewCaller(key))))
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	send := func(who string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/entries", strings.NewReader(`{}`))
		req.Header.Set("X-Key", who)
		return http.DefaultClient.Do(req)
	}
	held := func() int { return l.heldKey.Busy(1) }
	refused := make(chan int, 1)
	go func() {
		resp, err := send("a")
		if err != nil {
			refused <- 0
			return
		}
		resp.Body.Close()
		refused <- resp.StatusCode
	}()
	deadline := time.Now().Add(30 * time.Second)
	for held() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the handler's 429 was never held")
		}
		time.Sleep(time.Millisecond)
	}
	resp, err := send("b")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another key while a refusal is held: %d (the held refusal kept the admission slot)", resp.StatusCode)
	}
	select {
	case code := <-refused:
		t.Fatalf("the refusal went out during its hold: %d", code)
	default:
	}
	if code := <-refused; code != http.StatusTooManyRequests {
		t.Fatalf("the held refusal: %d, want 429", code)
	}
	if n := held(); n != 0 {
		t.Fatalf("%d refusals still counted as held", n)
	}
}
