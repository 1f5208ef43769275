package changestream

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/changestream/ssetest"
	"munin/internal/memory"
)

// addBig commits n changes of about a kilobyte each, in commits of 100.
func (f *fakeFeed) addBig(n int) {
	pad := strings.Repeat("x", 1000)
	for i := 0; i < n; i += 100 {
		var slugs []string
		for j := i; j < min(n, i+100); j++ {
			slugs = append(slugs, "big/"+strconv.Itoa(j+1)+"-"+pad)
		}
		f.add(slugs...)
	}
}

// TestStuckClientDoesNotHoldBackOthers: a client that never reads fills
// its socket buffers and its stream blocks in a write; meanwhile every
// commit returns and another stream receives every change.
func TestStuckClientDoesNotHoldBackOthers(t *testing.T) {
	const n = 1000 // ~1 MB: far more than the socket buffers hold
	feed := newFakeFeed()
	s := New(feed, Options{Heartbeat: time.Hour, Poll: time.Hour, PageSize: 50, WriteTimeout: time.Hour})
	srv := ssetest.ServeSmall(t, handlerOf(s))
	stuck := ssetest.Stuck(t, srv, "/?since=c0")
	waitOpen(t, s, 1)
	good := open(t, srv.URL, "Last-Event-ID", "c0")
	feed.addBig(n)
	ids, _ := good.changes(n)
	if want := seq("c", 1, n); !slices.Equal(ids, want) {
		t.Fatalf("the reading stream got %d changes out of order", len(ids))
	}
	// The stuck stream is still there, blocked in its write (its write
	// timeout is an hour), and held back nobody.
	if got := s.Open(); got != 2 {
		t.Fatalf("%d streams open, want 2 (the stuck one still blocked)", got)
	}
	stuck.Close()
	good.close()
	waitOpen(t, s, 0)
}

// TestStuckClientIsCutOff: past the write timeout the stuck client's stream
// ends; what reached its socket is a gapless prefix of the changes (its
// last id is where it resumes), and the connection is closed.
func TestStuckClientIsCutOff(t *testing.T) {
	const n = 1000
	feed := newFakeFeed()
	s := New(feed, Options{Heartbeat: time.Hour, Poll: time.Hour, PageSize: 50, WriteTimeout: 50 * time.Millisecond})
	srv := ssetest.ServeSmall(t, handlerOf(s))
	stuck := ssetest.Stuck(t, srv, "/?since=c0")
	waitOpen(t, s, 1)
	feed.addBig(n)
	waitOpen(t, s, 0)

	// Now read what the server had written before it gave up.
	_ = stuck.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(stuck)
	var ids []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // EOF: the server closed the connection (a partial line may precede it)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok && id != "c0" {
			ids = append(ids, id)
		}
	}
	t.Logf("%d changes reached the stuck socket before the cut", len(ids))
	if len(ids) >= n {
		t.Fatalf("the stuck client's socket took all %d changes; the buffers are not small", len(ids))
	}
	if want := seq("c", 1, len(ids)); !slices.Equal(ids, want) {
		t.Errorf("ids before the cut %v, want c1..c%d", ids, len(ids))
	}
}

// TestStreamKeepsNoPageBetweenPages: after a page of large changes the
// stream's buffer is given back, so an idle stream holds no page.
func TestStreamKeepsNoPageBetweenPages(t *testing.T) {
	feed := newFakeFeed()
	feed.addBig(50)
	s := New(feed, Options{PageSize: 50})
	st := &stream{s: s, w: httptest.NewRecorder(), c: memory.NewCaller(keyOf(1)), cursor: "c0"}
	st.rc = http.NewResponseController(st.w)
	page, err := st.read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.send(page); err != nil {
		t.Fatal(err)
	}
	if st.delivered != "c50" {
		t.Fatalf("delivered %q, want c50", st.delivered)
	}
	if c := st.buf.Cap(); c > maxIdleBuffer {
		t.Errorf("the stream keeps a buffer of %d bytes after a page of 50 KB", c)
	}
}
