package httpserver

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"munin/internal/memory"
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
	s := newStack(t, Config{MaxInFlight: 64, MaxInFlightPerKey: perKey}, blocking, nil)
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

// TestKeySlotsUnderConcurrency: many goroutines of a few keys never hold more
// than the limit of one key at once, and the table is empty afterwards.
func TestKeySlotsUnderConcurrency(t *testing.T) {
	const limit, keys, workers = 4, 3, 48
	k := newKeySlots(limit)
	var mu sync.Mutex
	held := map[int64]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := int64(w % keys)
			for range 200 {
				if !k.acquire(id) {
					continue
				}
				mu.Lock()
				held[id]++
				if held[id] > limit {
					t.Errorf("key %d holds %d slots, limit %d", id, held[id], limit)
				}
				mu.Unlock()
				mu.Lock()
				held[id]--
				mu.Unlock()
				k.release(id)
			}
		}()
	}
	wg.Wait()
	if len(k.busy) != 0 {
		t.Fatalf("slots kept for idle keys: %v", k.busy)
	}
}
