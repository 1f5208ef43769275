package changestream

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/changestream/ssetest"
	"munin/internal/memory"
)

// quiet are options under which only the signal wakes a stream (no poll or
// heartbeat within a test's life), so that a test sees what the signal did.
var quiet = Options{Heartbeat: time.Hour, Poll: -1, PageSize: 2}

func TestEventsArriveInOrderWithTheCursorAfterEachChange(t *testing.T) {
	feed := newFakeFeed()
	feed.add("old/one", "old/two") // history before "now" is not sent
	s := New(feed, quiet)
	srv := serveStreams(t, s)
	c := open(t, srv.URL)
	if e := c.must(); !e.HasID || e.ID != "c2" || e.Type != "" || e.Data != "" {
		t.Fatalf("first event %+v, want the bare start cursor c2", e)
	}
	feed.add("a/1")
	feed.add("a/2", "a/3", "a/4", "a/5", "a/6") // one commit, three pages of two
	ids, slugs := c.changes(6)
	if want := seq("c", 3, 8); !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if want := seq("a/", 1, 6); !slices.Equal(slugs, want) {
		t.Errorf("slugs %v, want %v", slugs, want)
	}
}

func TestLastEventIDResumesWithExactlyTheMissedChanges(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, quiet)
	srv := serveStreams(t, s)
	c := open(t, srv.URL, "Last-Event-ID", "c0")
	feed.add(seq("s/", 1, 3)...)
	ids, _ := c.changes(2)
	c.close()
	waitOpen(t, s, 0)
	feed.add(seq("s/", 4, 7)...)

	// The browser reconnects to the URL it opened (with since=c0) and
	// sends the last id it read: the header wins.
	c2 := open(t, srv.URL+"?since=c0", "Last-Event-ID", ids[len(ids)-1])
	ids2, slugs := c2.changes(5)
	if want := seq("s/", 3, 7); !slices.Equal(slugs, want) {
		t.Errorf("after resuming from %s: %v, want %v", ids[len(ids)-1], slugs, want)
	}
	if want := seq("c", 3, 7); !slices.Equal(ids2, want) {
		t.Errorf("ids %v, want %v", ids2, want)
	}
	// since alone works as well, for clients that are not an EventSource.
	c3 := open(t, srv.URL+"?since=c6")
	if _, slugs := c3.changes(1); slugs[0] != "s/7" {
		t.Errorf("since=c6 starts with %s, want s/7", slugs[0])
	}
	// An empty since reads from the beginning, as GET /changes does.
	c4 := open(t, srv.URL+"?since=")
	if _, slugs := c4.changes(7); !slices.Equal(slugs, seq("s/", 1, 7)) {
		t.Errorf("since= (empty): %v, want every change", slugs)
	}
}

func TestInvalidCursorIsRefusedBeforeTheStream(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, quiet)
	for _, hdr := range [][]string{{"Last-Event-ID", "garbled"}, {}} {
		path := "/"
		if len(hdr) == 0 {
			path = "/?since=c99"
		}
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		err := s.Serve(w, r, memory.NewCaller(keyOf(1)))
		if memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("%s %v: error %v, want invalid", path, hdr, err)
		}
		if w.Flushed || w.Body.Len() > 0 || w.Header().Get("Content-Type") != "" {
			t.Errorf("%s %v: the stream started before the cursor was checked: %q", path, hdr, w.Body.String())
		}
	}
	if n := s.Open(); n != 0 {
		t.Errorf("%d streams open after refusals", n)
	}
	// A refused stream gave its limit units back.
	srv := serveStreams(t, New(feed, Options{MaxPerKey: 1, Heartbeat: time.Hour, Poll: time.Hour}))
	resp := ssetest.Get(t, http.DefaultClient, srv.URL+"?since=nope")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	open(t, srv.URL)
}

func TestHeartbeatComments(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, Options{Heartbeat: 5 * time.Millisecond, Poll: time.Hour})
	c := open(t, serveStreams(t, s).URL)
	pings := 0
	for pings < 3 {
		e, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if e.Comment == "ping" {
			pings++
		}
	}
}

// TestRevokedKeyEndsItsStream: a stream checks its keys with every
// heartbeat; once one is revoked the stream ends with a failure event.
func TestRevokedKeyEndsItsStream(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, Options{Heartbeat: 5 * time.Millisecond, Poll: time.Hour})
	c := open(t, serveStreams(t, s).URL, "X-Key", "7")
	for pings := 0; pings < 2; { // the key is valid: the stream goes on
		if e, err := c.next(); err != nil {
			t.Fatal(err)
		} else if e.Comment == "ping" {
			pings++
		}
	}
	feed.revoke(7)
	e := c.must()
	for e.Type == "" { // the bare start id
		e = c.must()
	}
	if e.Type != "failure" || !strings.Contains(e.Data, `"code":"unauthorized"`) || !strings.Contains(e.Data, "key 7 (agent7) was revoked") {
		t.Errorf("event %+v, want the failure of a revoked key", e)
	}
	if _, err := c.next(); err != io.EOF {
		t.Errorf("after the failure: %v, want the end of the stream", err)
	}
}

// TestFeedReadsAreBounded: however many streams wake at once, at most
// MaxReads of them read the feed at a time; the others queue.
func TestFeedReadsAreBounded(t *testing.T) {
	const streams = 5
	feed := newFakeFeed()
	feed.gate = make(chan struct{})
	s := New(feed, Options{Heartbeat: time.Hour, Poll: -1, MaxReads: 2})
	srv := serveStreams(t, s)
	done := make(chan *http.Response, streams)
	for range streams {
		go func() { done <- ssetest.Get(t, http.DefaultClient, srv.URL) }()
	}
	// Every stream is reading or waiting to.
	for i := 0; feed.entered.Load()+s.Queued() < streams; i++ {
		if i == 2000 {
			t.Fatalf("%d reads inside, %d queued; want %d in all", feed.entered.Load(), s.Queued(), streams)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range streams {
		feed.gate <- struct{}{}
	}
	for range streams {
		if resp := <-done; resp.StatusCode != http.StatusOK {
			t.Errorf("stream: %d", resp.StatusCode)
		}
	}
	if most := feed.most.Load(); most != 2 {
		t.Errorf("%d feed reads at once, want at most MaxReads = 2 (and 2 reached)", most)
	}
}

func TestPollFindsChangesWithoutASignal(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, Options{Heartbeat: time.Hour, Poll: 5 * time.Millisecond})
	c := open(t, serveStreams(t, s).URL, "Last-Event-ID", "c0")
	feed.mu.Lock() // a write on another node: the feed has it, no signal fires
	feed.changes = append(feed.changes, Change{Project: "ws/proj", Slug: "remote/one", Kind: "remember"})
	feed.mu.Unlock()
	if _, slugs := c.changes(1); slugs[0] != "remote/one" {
		t.Errorf("got %v", slugs)
	}
}

func TestOneShotSignalIsTakenAgain(t *testing.T) {
	feed := newFakeFeed()
	feed.oneShot = true
	c := open(t, serveStreams(t, New(feed, quiet)).URL, "Last-Event-ID", "c0")
	for i := 1; i <= 3; i++ {
		feed.add(seq("w/", i, i)...)
		if _, slugs := c.changes(1); slugs[0] != seq("w/", i, i)[0] {
			t.Fatalf("write %d: got %v", i, slugs)
		}
	}
}

func TestStreamLimitPerKey(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, Options{MaxPerKey: 2, Heartbeat: time.Hour, Poll: time.Hour})
	srv := serveStreams(t, s)
	first := open(t, srv.URL)
	open(t, srv.URL)
	resp := ssetest.Get(t, http.DefaultClient, srv.URL)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "has 2 change streams open, the most one key may") {
		t.Fatalf("third stream of key 1: %d %s", resp.StatusCode, body)
	}
	open(t, srv.URL, "X-Key", "2") // another key of the project has its own
	first.close()
	waitOpen(t, s, 2)
	open(t, srv.URL) // the closed stream gave its place back

	// The project's keys together: ProjectKeys × MaxPerKey = 8 (key 1
	// holds two, key 2 one).
	for _, id := range []string{"2", "3", "3", "4", "4"} {
		open(t, srv.URL, "X-Key", id)
	}
	resp = ssetest.Get(t, http.DefaultClient, srv.URL, "X-Key", "5")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "project ws/proj has 8 change streams open") {
		t.Fatalf("a ninth stream of the project: %d %s", resp.StatusCode, body)
	}
}

func TestCloseEndsStreamsWithResync(t *testing.T) {
	feed := newFakeFeed()
	s := New(feed, quiet)
	c := open(t, serveStreams(t, s).URL, "Last-Event-ID", "c0")
	feed.add("x/1")
	c.changes(1)
	s.Close()
	e := c.must()
	if e.Type != "resync" || e.ID != "c1" || e.Data != `{"cursor":"c1"}` {
		t.Errorf("last event %+v, want resync from c1", e)
	}
	if _, err := c.next(); err != io.EOF {
		t.Errorf("after resync: %v, want the end of the stream", err)
	}
	waitOpen(t, s, 0)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if err := s.Serve(httptest.NewRecorder(), r, memory.NewCaller(keyOf(1))); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("a stream after Close: %v, want unavailable", err)
	}
}

func TestFeedErrorEndsTheStreamWithAnErrorEvent(t *testing.T) {
	feed := newFakeFeed()
	c := open(t, serveStreams(t, New(feed, quiet)).URL)
	c.must()
	feed.setFail(memory.Errorf(memory.CodeUnauthorized, "the key was revoked"))
	feed.add("y/1")
	e := c.must()
	if e.Type != "failure" || e.Data != `{"code":"unauthorized","message":"the key was revoked"}` {
		t.Errorf("event %+v, want the error", e)
	}
	// A failure of the first read is the transport's to answer.
	feed.setFail(errors.New("disk on fire"))
	if resp := ssetest.Get(t, http.DefaultClient, serveStreams(t, New(feed, quiet)).URL); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
}

func TestIsPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/changes/stream":            true,
		"/w/ws/p/proj/changes/stream":       true,
		"/api/v1/changes":                   false,
		"/api/v1/entries/changes/stream":    false,
		"/w/ws/p/proj/e/changes/stream":     false,
		"/w//p/proj/changes/stream":         false,
		"/x/w/ws/p/proj/changes/stream":     false,
		"/w/ws/p/proj/changes/stream/":      false,
		"/api/v2/changes/stream":            false,
		"/mcp":                              false,
		"/w/ws/p/proj/changes/streamx":      false,
		"/w/ws/p/proj/audit/changes/stream": false,
	} {
		if got := IsPath(path); got != want {
			t.Errorf("IsPath(%q) = %v, want %v", path, got, want)
		}
	}
}
