package httpserver

import (
	"io"
	"net/http"
	"net/url"
	"testing"
)

// TestChangeStreamsHoldNoRequestSlot: change streams (REST and web UI paths)
// are admitted like MCP's GET stream — by their key's rate, not a request
// slot — so a key with one slot in flight opens several streams and still
// makes an ordinary request while they run. Without the exemption the
// second stream would be refused with 429.
func TestChangeStreamsHoldNoRequestSlot(t *testing.T) {
	ended := make(chan string, 8)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/changes/stream", idleStream(ended))
	mux.Handle("/", echoKey())
	s := newStack(t, Config{MaxInFlight: 2, MaxInFlightPerKey: 1, RatePerKey: 1000, RefusalHold: -1}, nil, mux)
	s.serve(t)

	get := func(path string) *http.Response {
		t.Helper()
		r, _ := http.NewRequest("GET", s.base+path, nil)
		r.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for i := range 3 {
		if resp := get("/api/v1/changes/stream"); resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("stream %d: status %d %s", i+1, resp.StatusCode, b)
		}
	}
	if resp := get("/api/v1/me"); resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("a request beside three streams: status %d %s", resp.StatusCode, b)
	}
	// Any other path under the stream's name takes a slot as before.
	if isStream(&http.Request{Method: http.MethodGet, URL: mustURL(t, "/api/v1/entries/changes/stream")}) {
		t.Error("an entry's GET counts as a stream")
	}
	if !isStream(&http.Request{Method: http.MethodGet, URL: mustURL(t, "/w/ws/p/proj/changes/stream")}) {
		t.Error("the web UI's project stream does not count as a stream")
	}
}

// TestShutdownEndsChangeStreams: Shutdown cancels a change stream's request
// as it does MCP's, instead of waiting for its client to hang up.
func TestShutdownEndsChangeStreams(t *testing.T) {
	ended := make(chan string, 1)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/changes/stream", idleStream(ended))
	s := newStack(t, Config{}, nil, mux)
	s.serve(t)
	r, _ := http.NewRequest("GET", s.base+"/api/v1/changes/stream", nil)
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	shutdownEnds(t, s, ended)
}

func mustURL(t *testing.T, path string) *url.URL {
	t.Helper()
	u, err := url.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// idleStream is a fake change stream: it sends its headers, then waits for
// its request to end. It flushes through http.ResponseController, as
// changestream does (the API's writer is wrapped).
func idleStream(ended chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if err := http.NewResponseController(w).Flush(); err != nil {
			ended <- "flush failed: " + err.Error()
			return
		}
		<-r.Context().Done()
		ended <- "cancelled"
	})
}
