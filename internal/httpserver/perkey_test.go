package httpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// TestOneKeyCannotTakeEverySlot: a key with its limit of requests in flight
// gets 429 with Retry-After at once, while another key is served; once its
// requests end, its slots are free again and nothing is kept for it.
func TestOneKeyCannotTakeEverySlot(t *testing.T) {
	const perKey = 3
	release := make(chan struct{})
	entered := make(chan string, 16)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- r.Header.Get("X-Hold")
			<-release
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	s := newStack(t, Config{MaxInFlight: 64, MaxInFlightPerKey: perKey, RatePerKey: -1, RefusalHold: -1}, blocking, nil)
	other, _ := s.env.Key(t, "ws2", "proj", "agent-2", memory.RoleRead)
	s.serve(t)
	send := func(token string, hold bool) (int, string, string) {
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if hold {
			req.Header.Set("X-Hold", token[:10])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, "", ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}

	var wg sync.WaitGroup
	for range perKey {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, _, body := send(s.token, true); st != http.StatusOK {
				t.Errorf("held request: %d %s", st, body)
			}
		}()
	}
	for range perKey {
		<-entered
	}
	for range 10 {
		st, retry, body := send(s.token, false)
		if st != http.StatusTooManyRequests || retry == "" || errorCode(t, []byte(body)) != "unavailable" ||
			!strings.Contains(body, "3 requests in flight") {
			t.Fatalf("request over the key's limit: %d, Retry-After %q: %s", st, retry, body)
		}
	}
	if st, _, body := send(other, false); st != http.StatusOK {
		t.Fatalf("another key while the first is at its limit: %d %s", st, body)
	}
	close(release)
	wg.Wait()
	if st, _, body := send(s.token, false); st != http.StatusOK {
		t.Fatalf("the key after its requests ended: %d %s", st, body)
	}
}

// TestKeyLimitsUnderConcurrency: many goroutines of a few keys never hold
// more than one key's limit in flight at once.
func TestKeyLimitsUnderConcurrency(t *testing.T) {
	const limit, keys, workers = 4, 3, 48
	l := newKeyLimits(limit, -1, -1)
	var mu sync.Mutex
	held := map[int64]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := int64(w % keys)
			for range 200 {
				release, refused := l.admit(memory.Key{ID: id}, false)
				if refused != nil {
					continue
				}
				mu.Lock()
				held[id]++
				if held[id] > limit {
					t.Errorf("key %d holds %d slots, limit %d", id, held[id], limit)
				}
				held[id]--
				mu.Unlock()
				release()
			}
		}()
	}
	wg.Wait()
	for id := range int64(keys) {
		if n := l.key.Busy(id); n != 0 {
			t.Errorf("key %d still has %d requests in flight", id, n)
		}
	}
}

// TestKeyRateRefusalIsHeldWithoutItsSlot: a key past its requests per second
// is refused 429 with Retry-After; the refusal is held back, but gives its
// admission slot back at once, so another key is served meanwhile even with
// a server-wide limit of one request. Idle keys' state is dropped.
func TestKeyRateRefusalIsHeldWithoutItsSlot(t *testing.T) {
	now := time.Now()
	var clock sync.Mutex
	l := newLimits(-1, 1, 2*time.Second, 1) // 1/s, burst 2; one request in flight on the server
	l.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	keyA := memory.Key{ID: 1, Agent: "a"}
	keyB := memory.Key{ID: 2, Agent: "b"}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	h := admitAnonymous(l, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := keyA
		if r.Header.Get("X-Key") == "b" {
			key = keyB
		}
		limitPerKey(l, ok).ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), memory.NewCaller(key))))
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(ctx context.Context, who string) (int, string, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/x", strings.NewReader(`{}`))
		req.Header.Set("X-Key", who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}
	for i := range 2 {
		if st, _, body := get(context.Background(), "a"); st != http.StatusOK {
			t.Fatalf("request %d of the burst: %d %s", i+1, st, body)
		}
	}
	refused := make(chan [3]string, 1)
	go func() {
		st, retry, body := get(context.Background(), "a")
		refused <- [3]string{strconv.Itoa(st), retry, body}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l.heldKey.Busy(keyA.ID) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refusal over the rate was never held")
		}
		time.Sleep(time.Millisecond)
	}
	if st, _, body := get(context.Background(), "b"); st != http.StatusOK {
		t.Fatalf("another key while a refusal is held: %d %s (the held refusal kept the admission slot)", st, body)
	}
	r := <-refused // after the hold
	st, retry, body := r[0], r[1], r[2]
	if st != "429" || retry != "1" || errorCode(t, []byte(body)) != "unavailable" ||
		!strings.Contains(body, "more than 1 requests per second") {
		t.Fatalf("request over the rate: %s, Retry-After %q: %s", st, retry, body)
	}
	l.hold = -1 // refusals are sent at once, their connection closed
	code, retry, body := get(context.Background(), "a")
	if code != http.StatusTooManyRequests || retry == "" || errorCode(t, []byte(body)) != "unavailable" ||
		!strings.Contains(body, "more than 1 requests per second") {
		t.Fatalf("request over the rate, not held: %d, Retry-After %q: %s", code, retry, body)
	}
	clock.Lock()
	now = now.Add(2 * time.Minute)
	clock.Unlock()
	if st, _, body := get(context.Background(), "b"); st != http.StatusOK {
		t.Fatalf("after the idle time: %d %s", st, body)
	}
	if n := l.key.Len(); n != 1 {
		t.Fatalf("state of idle keys is kept: %d keys", n)
	}
}
