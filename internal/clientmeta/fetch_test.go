package clientmeta

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

// A document that redirects is refused, and the redirect is not followed.
func TestRedirectRefused(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	s.serveDoc("/elsewhere.json", goodDoc(id))
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		s.handle("/client.json", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere.json", code)
		})
		f := s.fetcher(newClock(), Options{})
		_, err := f.Client(context.Background(), id)
		wantInvalid(t, err, "must not redirect")
	}
	if n := s.count("/elsewhere.json"); n != 0 {
		t.Errorf("redirect target got %d requests, want 0", n)
	}
}

// Only a 200 with a JSON content type is read.
func TestStatusAndContentType(t *testing.T) {
	s := newDocServer(t)
	f := s.fetcher(newClock(), Options{})
	body, _ := json.Marshal(goodDoc(s.URL + "/ct/text"))
	s.serveRaw("/ct/text", "text/plain", string(body))
	_, err := f.Client(context.Background(), s.URL+"/ct/text")
	wantInvalid(t, err, "must have Content-Type application/json")

	body, _ = json.Marshal(goodDoc(s.URL + "/ct/none"))
	s.handle("/ct/none", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no sniffing either
		w.Write(body)
	})
	_, err = f.Client(context.Background(), s.URL+"/ct/none")
	wantInvalid(t, err, "must have Content-Type application/json")

	_, err = f.Client(context.Background(), s.URL+"/missing.json")
	wantInvalid(t, err, "answered HTTP 404, want 200")

	s.handle("/created.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(goodDoc(s.URL + "/created.json"))
	})
	_, err = f.Client(context.Background(), s.URL+"/created.json")
	wantInvalid(t, err, "answered HTTP 201, want 200")
}

// A document over MaxBytes is refused, with or without Content-Length; one
// of exactly MaxBytes is read.
func TestOverSizeRefused(t *testing.T) {
	s := newDocServer(t)
	f := s.fetcher(newClock(), Options{})
	padded := func(id string, size int) string {
		body, _ := json.Marshal(goodDoc(id))
		return string(body[:len(body)-1]) + strings.Repeat(" ", size-len(body)) + "}"
	}
	exact := padded(s.URL+"/exact.json", DefaultMaxBytes)
	s.serveRaw("/exact.json", "application/json", exact)
	if _, err := f.Client(context.Background(), s.URL+"/exact.json"); err != nil {
		t.Fatalf("document of exactly %d bytes: %v", len(exact), err)
	}
	over := padded(s.URL+"/chunked.json", DefaultMaxBytes+1)
	s.serveRaw("/chunked.json", "application/json", over) // too big for net/http to set Content-Length
	_, err := f.Client(context.Background(), s.URL+"/chunked.json")
	wantInvalid(t, err, "larger than 65536 bytes")

	over = padded(s.URL+"/declared.json", 1<<20)
	s.serveRaw("/declared.json", "application/json", over, "Content-Length: "+strconv.Itoa(len(over)))
	_, err = f.Client(context.Background(), s.URL+"/declared.json")
	wantInvalid(t, err, "larger than 65536 bytes")
}

// A server that does not answer is given up after Timeout. The handler
// blocks until the client goes away or the test ends.
func TestSlowServerTimesOut(t *testing.T) {
	s := newDocServer(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	s.handle("/slow.json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	f := s.fetcher(newClock(), Options{Timeout: 100 * time.Millisecond})
	_, err := f.Client(context.Background(), s.URL+"/slow.json")
	wantInvalid(t, err, "could not be fetched within 100ms")
}

// With every slot taken, a fetch waits up to Timeout and then fails with
// a clear error; that failure is not remembered against the URL.
func TestConcurrencyLimit(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	s.serveDoc("/client.json", goodDoc(id))
	f := s.fetcher(newClock(), Options{MaxConcurrent: 2, Timeout: 500 * time.Millisecond})
	f.slots <- struct{}{}
	f.slots <- struct{}{} // two fetches under way elsewhere
	_, err := f.Client(context.Background(), id)
	if memory.ErrorCode(err) != memory.CodeUnavailable || !strings.Contains(err.Error(), "at once (limit 2)") {
		t.Fatalf("error %v, want unavailable naming the limit", err)
	}
	if n := s.total(); n != 0 {
		t.Fatalf("server got %d requests with no slot free, want 0", n)
	}
	<-f.slots
	if _, err := f.Client(context.Background(), id); err != nil {
		t.Fatalf("with a slot free: %v (was the busy refusal cached?)", err)
	}
}

// A caller that gives up gets its context's error at once; the fetch goes
// on for whoever asks next, and its result is cached.
func TestCallerGivesUp(t *testing.T) {
	s := newDocServer(t)
	id := s.URL + "/client.json"
	started, release := make(chan struct{}), make(chan struct{})
	body, _ := json.Marshal(goodDoc(id))
	s.handle("/client.json", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	f := s.fetcher(newClock(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := f.Client(ctx, id); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	close(release)
	if _, err := f.Client(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := s.count("/client.json"); n != 1 {
		t.Fatalf("server got %d requests, want 1 (the abandoned fetch should have finished and been cached)", n)
	}
}
