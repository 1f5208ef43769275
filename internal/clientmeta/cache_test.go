package clientmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A second request for a client is answered from the cache.
func TestCacheHit(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	s.serveDoc("/client.json", goodDoc(id))
	f := s.fetcher(newClock(), Options{})
	for range 3 {
		mustClient(t, f, id)
	}
	if n := s.count("/client.json"); n != 1 {
		t.Fatalf("server got %d requests for three lookups, want 1", n)
	}
}

// A document is kept for its max-age, clamped to [MinTTL, MaxTTL], or
// DefaultTTL without one: still cached a second before, fetched again at it.
func TestCacheLifetime(t *testing.T) {
	s := newDocServer(t)
	cases := []struct {
		cacheControl string
		ttl          time.Duration
	}{
		{"", DefaultTTL},
		{"max-age=600", 10 * time.Minute},
		{"public, max-age=7200", 2 * time.Hour},
		{"max-age=10", MinTTL},
		{"max-age=0", MinTTL},
		{"no-store", MinTTL},
		{"no-cache, max-age=3600", MinTTL},
		{"max-age=abc", MinTTL},
		{"max-age=31536000", MaxTTL},
		{"max-age=99999999999999999999", MaxTTL},
		{"max-age=900, max-age=60", 15 * time.Minute},
	}
	for i, c := range cases {
		path := fmt.Sprintf("/ttl/%d", i)
		var headers []string
		if c.cacheControl != "" {
			headers = append(headers, "Cache-Control: "+c.cacheControl)
		}
		s.serveDoc(path, goodDoc(s.URL+path), headers...)
		clock := newClock()
		f := s.fetcher(clock, Options{})
		mustClient(t, f, s.URL+path)
		clock.Add(c.ttl - time.Second)
		mustClient(t, f, s.URL+path)
		if n := s.count(path); n != 1 {
			t.Errorf("Cache-Control %q: %d requests a second before %s, want 1", c.cacheControl, n, c.ttl)
		}
		clock.Add(time.Second)
		mustClient(t, f, s.URL+path)
		if n := s.count(path); n != 2 {
			t.Errorf("Cache-Control %q: %d requests at %s, want 2", c.cacheControl, n, c.ttl)
		}
	}
}

// A refusal is remembered for NegativeTTL: lookups within it cost no fetch
// and get the same error, even if the document is fixed meanwhile.
func TestNegativeCache(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	s.serveDoc("/client.json", goodDoc("https://other.example/client.json"))
	clock := newClock()
	f := s.fetcher(clock, Options{})
	for range 5 {
		_, err := f.Client(context.Background(), id)
		wantInvalid(t, err, "client_id equal to the URL")
	}
	s.serveDoc("/client.json", goodDoc(id))
	clock.Add(NegativeTTL - time.Second)
	_, err := f.Client(context.Background(), id)
	wantInvalid(t, err, "client_id equal to the URL")
	if n := s.count("/client.json"); n != 1 {
		t.Fatalf("%d requests within the negative TTL, want 1", n)
	}
	clock.Add(time.Second)
	if _, err := f.Client(context.Background(), id); err != nil {
		t.Fatalf("after the negative TTL: %v", err)
	}
	if n := s.count("/client.json"); n != 2 {
		t.Fatalf("%d requests after the negative TTL, want 2", n)
	}
}

// Twenty concurrent lookups of one URL cause exactly one request. The
// server holds the first request until the other nineteen have joined it
// (or, were they not to share it, until a second request arrives).
func TestSingleflight(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	body, _ := json.Marshal(goodDoc(id))
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	var requests atomic.Int32
	s.handle("/client.json", func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) > 1 {
			open()
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	f := s.fetcher(newClock(), Options{})
	const callers = 20
	var joined atomic.Int32
	f.joined = func() {
		if joined.Add(1) == callers-1 {
			open()
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			c, err := f.Client(context.Background(), id)
			if err == nil && c.ID != id {
				err = fmt.Errorf("client %q, want %q", c.ID, id)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests for %d concurrent lookups, want 1", n, callers)
	}
}

// The cache holds at most MaxEntries URLs: when full, expired entries go
// first, then the oldest.
func TestCacheBounded(t *testing.T) {
	s := newDocServer(t)
	clock := newClock()
	f := s.fetcher(clock, Options{MaxEntries: 2})
	for _, p := range []string{"/a", "/b", "/c"} {
		s.serveDoc(p, goodDoc(s.URL+p))
		mustClient(t, f, s.URL+p)
		clock.Add(time.Second)
	}
	if n := len(f.entries); n != 2 {
		t.Fatalf("%d cache entries, want 2", n)
	}
	mustClient(t, f, s.URL+"/b")
	mustClient(t, f, s.URL+"/c")
	if s.count("/b") != 1 || s.count("/c") != 1 {
		t.Fatalf("requests b=%d c=%d, want 1 each (the newest two stay cached)", s.count("/b"), s.count("/c"))
	}
	mustClient(t, f, s.URL+"/a")
	if n := s.count("/a"); n != 2 {
		t.Fatalf("requests for the oldest entry: %d, want 2 (it should have been evicted)", n)
	}
}

// When the cache is full, expired entries make room before the oldest
// live one goes.
func TestCacheEvictsExpiredFirst(t *testing.T) {
	s := newDocServer(t)
	clock := newClock()
	f := s.fetcher(clock, Options{MaxEntries: 2})
	s.serveDoc("/old", goodDoc(s.URL+"/old"))                                 // kept DefaultTTL
	s.serveDoc("/short", goodDoc(s.URL+"/short"), "Cache-Control: max-age=1") // kept MinTTL
	s.serveDoc("/new", goodDoc(s.URL+"/new"))
	mustClient(t, f, s.URL+"/old")
	clock.Add(time.Second)
	mustClient(t, f, s.URL+"/short")
	clock.Add(MinTTL) // /short has expired, /old (older, but live) has not
	mustClient(t, f, s.URL+"/new")
	mustClient(t, f, s.URL+"/old")
	if n := s.count("/old"); n != 1 {
		t.Fatalf("requests for the live entry: %d, want 1 (the expired one should have made room)", n)
	}
}
