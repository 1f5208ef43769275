package changestream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/changestream/ssetest"
	"munin/internal/memory"
)

// fakeFeed is a feed in memory: cursor "c<n>" is after the n-th change.
type fakeFeed struct {
	mu      sync.Mutex
	changes []Change
	subs    map[int]chan struct{}
	nextSub int
	// oneShot makes the signal close after one write, instead of firing.
	oneShot bool
	// fail, when set, is returned by every read.
	fail  error
	reads int
	// revoked keys fail KeyByID.
	revoked map[int64]bool
	// gate, when set, holds every read until it receives; entered and
	// most count the reads inside and the most at once.
	gate          chan struct{}
	entered, most atomic.Int64
}

func newFakeFeed() *fakeFeed {
	return &fakeFeed{subs: make(map[int]chan struct{}), revoked: make(map[int64]bool)}
}

// add appends changes (one commit) and fires every signal without waiting.
func (f *fakeFeed) add(slugs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range slugs {
		f.changes = append(f.changes, Change{Project: "ws/proj", Slug: s, Version: 1, Agent: "alice", Kind: "remember", At: time.Unix(int64(len(f.changes)), 0).UTC()})
	}
	for id, ch := range f.subs {
		if f.oneShot {
			close(ch)
			delete(f.subs, id)
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *fakeFeed) Changes(_ context.Context, _ memory.Caller, req Request) (Result, error) {
	if f.gate != nil {
		n := f.entered.Add(1)
		for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
		}
		<-f.gate
		defer f.entered.Add(-1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.fail != nil {
		return Result{}, f.fail
	}
	var n int
	switch {
	case req.Since == "now":
		n = len(f.changes)
	case req.Since == "":
	default:
		v, err := strconv.Atoi(strings.TrimPrefix(req.Since, "c"))
		if !strings.HasPrefix(req.Since, "c") || err != nil || v < 0 || v > len(f.changes) {
			return Result{}, memory.Errorf(memory.CodeInvalid, "since %q is not a cursor of this feed", req.Since)
		}
		n = v
	}
	end := min(len(f.changes), n+req.Limit)
	res := Result{Changes: append([]Change(nil), f.changes[n:end]...), NextCursor: "c" + strconv.Itoa(end)}
	if req.PerChange {
		for i := n + 1; i <= end; i++ {
			res.Cursors = append(res.Cursors, "c"+strconv.Itoa(i))
		}
	}
	return res, nil
}

func (f *fakeFeed) ChangeSignal(memory.Caller) (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextSub
	f.nextSub++
	ch := make(chan struct{}, 1)
	f.subs[id] = ch
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

func (f *fakeFeed) KeyByID(_ context.Context, id int64) (memory.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked[id] {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "revoked")
	}
	return keyOf(id), nil
}

func (f *fakeFeed) revoke(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked[id] = true
}

func (f *fakeFeed) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// keyOf is a key of ws/proj with id.
func keyOf(id int64) memory.Key {
	return memory.Key{ID: id, Project: memory.ProjectRef{Workspace: "ws", Project: "proj"}, Agent: "agent" + strconv.FormatInt(id, 10), Role: memory.RoleRead}
}

// serveStreams serves s over HTTP; the caller is the key whose id is in
// the X-Key header (1 without), errors answer with their status as the
// transports do.
func serveStreams(t *testing.T, s *Streams) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handlerOf(s))
	t.Cleanup(srv.Close)
	return srv
}

func handlerOf(s *Streams) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := int64(1)
		if v := r.Header.Get("X-Key"); v != "" {
			id, _ = strconv.ParseInt(v, 10, 64)
		}
		err := s.Serve(w, r, memory.NewCaller(keyOf(id)))
		var refused *RefusedError
		switch {
		case err == nil:
		case errors.As(err, &refused):
			http.Error(w, refused.Message, http.StatusTooManyRequests)
		case memory.ErrorCode(err) == memory.CodeInvalid:
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// client is one open stream.
type client struct {
	t    *testing.T
	resp *http.Response
	r    *ssetest.Reader
}

// open opens a stream with the given headers ("Last-Event-ID", "c3", …) and
// checks it started.
func open(t *testing.T, url string, hdr ...string) *client {
	t.Helper()
	resp := ssetest.Get(t, http.DefaultClient, url, hdr...)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	return &client{t: t, resp: resp, r: ssetest.NewReader(resp.Body)}
}

// close ends the stream from the client's side.
func (c *client) close() { c.resp.Body.Close() }

// next reads the next event or comment; io.EOF when the server ended the stream.
func (c *client) next() (ssetest.Event, error) { return c.r.Next() }

// must reads the next event that is not a comment.
func (c *client) must() ssetest.Event {
	c.t.Helper()
	for {
		e, err := c.next()
		if err != nil {
			c.t.Fatalf("read event: %v", err)
		}
		if e.Comment == "" {
			return e
		}
	}
}

// changes reads n change events and returns their ids and slugs.
func (c *client) changes(n int) (ids, slugs []string) {
	c.t.Helper()
	for len(ids) < n {
		e := c.r.NextOf(c.t, "change")
		var ch Change
		if err := json.Unmarshal([]byte(e.Data), &ch); err != nil {
			c.t.Fatalf("data %q: %v", e.Data, err)
		}
		ids, slugs = append(ids, e.ID), append(slugs, ch.Slug)
	}
	return ids, slugs
}

// waitOpen waits until s serves n streams (a handler ends a moment after
// its client or its write fails); bounded by tries, not by time.
func waitOpen(t *testing.T, s *Streams, n int64) {
	t.Helper()
	for range 2000 {
		if s.Open() == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d streams open, want %d", s.Open(), n)
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}
