package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/service"
)

// holdingEndpoint stands in front of a working endpoint and holds every
// request whose body contains hold until the test ends (or the request is
// given up): the worker's call for one entry hangs while query embeddings
// and every other call are answered. held receives one value per held
// request.
func holdingEndpoint(t *testing.T, ep *embedtest.Server, hold string) (url string, held <-chan struct{}) {
	t.Helper()
	release, heldc := make(chan struct{}), make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if bytes.Contains(body, []byte(hold)) {
			heldc <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			http.Error(w, "held", http.StatusServiceUnavailable)
			return
		}
		relay(w, r, ep.URL, body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees held handlers so Close returns
	return srv.URL, heldc
}

// Read-your-writes holds with meaning on and the endpoint working: an entry
// whose vector is not stored yet (the worker's call for it is held) is found
// by words at once and says "words", while in the same answer an entry with
// its vector says "both" (the meaning path answered; this was no fallback).
func TestMeaningReadYourWritesBeforeVector(t *testing.T) {
	ep := embedtest.New(32)
	t.Cleanup(ep.Close)
	url, held := holdingEndpoint(t, ep, "crossing moved")
	a, _, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: url, Model: "m"}}, Logger: quietLog()})
	c := mustKey(t, a, token)
	ctx := context.Background()

	if _, err := a.Svc.Remember(ctx, c, service.RememberRequest{Slug: "zoo/old", Content: "The zebra enclosure got a new fence."}); err != nil {
		t.Fatal(err)
	}
	waitBacklog(t, a, service.DefaultProject)
	if _, err := a.Svc.Remember(ctx, c, service.RememberRequest{Slug: "zoo/new", Content: "Zebra crossing moved to the north gate."}); err != nil {
		t.Fatal(err)
	}
	<-held // the worker is embedding zoo/new now; its vector is not stored
	if n := countVectors(t, a); n != 1 {
		t.Fatalf("%d vectors stored, want only zoo/old's", n)
	}

	// A recall that waited for the held vector would wait for ever: the
	// minute only turns that hang into a failure that names it.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := a.Svc.Recall(rctx, c, service.RecallRequest{Query: "zebra"})
	if err != nil {
		t.Fatal(err)
	}
	match := map[string]string{}
	for _, h := range res.Hits {
		match[h.Slug] = string(h.Match)
	}
	if match["zoo/new"] != string(memory.MatchWords) || match["zoo/old"] != string(memory.MatchBoth) {
		t.Fatalf("recall before zoo/new's vector: %v, want zoo/new by words and zoo/old both ways", match)
	}
	if s := a.Embed.Stats(); s.Embedded != 1 {
		t.Fatalf("worker stats %+v: zoo/new's vector stored meanwhile", s)
	}
}

// relay passes a request whose body was already read on to the embedding
// endpoint at base, and its answer back: the proxies of these tests see
// every call and change only the ones they are about.
func relay(w http.ResponseWriter, r *http.Request, base string, body []byte) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}
