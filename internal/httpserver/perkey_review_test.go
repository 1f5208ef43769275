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

	"munin/internal/limit"
	"munin/internal/memory"
	"munin/internal/service"
)

// perKeyServer serves h behind limitPerKey(l) as key for every request.
func perKeyServer(t *testing.T, l *keyLimits, key memory.Key, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitPerKey(l, h).ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), memory.NewCaller(key))))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestKeyRateRetryAfterFollowsTheRate: with a rate below one request per
// second, Retry-After and the message say when the next request may come,
// not a fixed second that would be refused again.
func TestKeyRateRetryAfterFollowsTheRate(t *testing.T) {
	now := time.Now()
	l := newKeyLimits(-1, 0.25, -1) // one request per 4 s, burst 1; refusals sent at once
	l.now = func() time.Time { return now }
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	srv := perKeyServer(t, l, memory.Key{ID: 1, Agent: "a"}, ok)
	send := func() (int, string, string) {
		resp, err := http.Post(srv.URL+"/api/v1/x", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}
	if st, _, body := send(); st != http.StatusOK {
		t.Fatalf("first request: %d %s", st, body)
	}
	st, retry, body := send()
	secs, err := strconv.Atoi(retry)
	if st != http.StatusTooManyRequests || err != nil || secs != 4 || !strings.Contains(body, "retry after 4 s") {
		t.Fatalf("request over a rate of 0.25/s: %d, Retry-After %q: %s; want 429, Retry-After 4 and the same in the message", st, retry, body)
	}
}

// TestStreamsDoNotTakeTheKeysSlots: open GET /mcp streams of a key, as many
// as its in-flight limit and more, leave its POSTs their slots (a stream is
// long-lived; the streams' number has its own cap in mcpserver), while they
// still count against the key's rate.
func TestStreamsDoNotTakeTheKeysSlots(t *testing.T) {
	const slots = 2
	l := newKeyLimits(slots, -1, -1)
	release := make(chan struct{})
	// ready gets "" when a stream is open, its status when it is refused.
	ready := make(chan string, 2*slots)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ready <- ""
			<-release
		}
		_, _ = w.Write([]byte(`{}`))
	})
	srv := perKeyServer(t, l, memory.Key{ID: 1, Agent: "a"}, h)
	var streams sync.WaitGroup
	t.Cleanup(func() { close(release); streams.Wait() })
	for range 2 * slots {
		streams.Add(1)
		go func() {
			defer streams.Done()
			resp, err := http.Get(srv.URL + "/mcp")
			if err != nil {
				ready <- err.Error()
				return
			}
			if resp.StatusCode != http.StatusOK {
				ready <- resp.Status
			}
			resp.Body.Close()
		}()
	}
	for range 2 * slots {
		if st := <-ready; st != "" {
			t.Fatalf("stream refused: %s (streams count against the key's requests in flight)", st)
		}
	}
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST while %d streams are open: %d %s (the streams took the key's slots)", 2*slots, resp.StatusCode, body)
	}

	// The rate counts streams: a burst of 2 (1/s) is spent by two GETs.
	r := newKeyLimits(slots, 1, -1)
	fixed := time.Now()
	r.now = func() time.Time { return fixed }
	for i := range 2 {
		if _, refused := r.admit(memory.Key{ID: 1}, true); refused != nil {
			t.Fatalf("stream %d of the burst: %+v", i+1, refused)
		}
	}
	if _, refused := r.admit(memory.Key{ID: 1}, true); refused == nil || refused.Verdict != limit.OverRate {
		t.Fatalf("a stream past the rate: %+v, want over the rate", refused)
	}
}

// TestHeldRefusalsAreBounded: at most maxHeldPerKey refusals of one key and
// maxHeld in all are held back; beyond them a refusal is sent at once.
// Many goroutines holding and letting go leave no count behind.
func TestHeldRefusalsAreBounded(t *testing.T) {
	l := newKeyLimits(1, -1, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a held refusal ends at once when its request has ended
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	var taken []func()
	hold := func(id int64) {
		release, refused := limit.Acquire(l.heldKey.Slot(id), l.heldAll.Slot(struct{}{}))
		if refused != nil {
			t.Fatalf("hold %d of key %d refused: %+v", len(taken)+1, id, refused)
		}
		taken = append(taken, release)
	}
	for range maxHeldPerKey {
		hold(0)
	}
	if l.holdBack(r, 0) {
		t.Fatalf("refusal %d of one key was held, want sent at once", maxHeldPerKey+1)
	}
	if !l.holdBack(r, 1) {
		t.Fatal("another key's refusal was not held")
	}
	for id := int64(1); len(taken) < maxHeld; id++ {
		hold(id)
	}
	if l.holdBack(r, 1_000_000) {
		t.Fatalf("refusal past %d held in all was held, want sent at once", maxHeld)
	}
	for _, release := range taken {
		release()
	}

	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			id := int64(w % 4)
			for range 200 {
				if release, refused := l.admit(memory.Key{ID: id}, false); refused == nil {
					release()
					continue
				}
				l.holdBack(r, id)
			}
		})
	}
	wg.Wait()
	for id := range int64(4) {
		if h, b := l.heldKey.Busy(id), l.key.Busy(id); h != 0 || b != 0 {
			t.Fatalf("key %d: %d held, %d busy after every request ended", id, h, b)
		}
	}
	if n := l.heldAll.Busy(struct{}{}); n != 0 {
		t.Fatalf("%d refusals still counted as held", n)
	}
}
