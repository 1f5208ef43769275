package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"munin/internal/changestream"
	"munin/internal/service"
)

// smallBuffers gives every accepted connection a small send buffer, so that
// a client that does not read blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStuckStreamHoldsBackNoWriterAndNoOtherStream: over the real service,
// a client that opens a stream and never reads fills its socket buffers,
// and its stream blocks in a write (its write timeout is an hour here). An
// agent's remembers all return meanwhile, and another stream receives every
// change. Counted, not timed.
func TestStuckStreamHoldsBackNoWriterAndNoOtherStream(t *testing.T) {
	const n = 300 // ~120 KB of events: several times what the buffers hold
	f := newStreamFixture(t, changestream.Options{WriteTimeout: time.Hour, PageSize: 50})
	srv := httptest.NewUnstartedServer(f.handler)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	stuck, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	_ = stuck.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(stuck, "GET /api/v1/changes/stream HTTP/1.1\r\nHost: munin\r\nAuthorization: Bearer %s\r\n\r\n", f.reader)
	for i := 0; f.streams.Open() < 1; i++ {
		if i == 2000 {
			t.Fatal("the stuck client's stream did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	good := f.open(t, "/api/v1/changes/stream")

	pad := strings.Repeat("x", 100)
	for i := range n {
		slug := fmt.Sprintf("s/%03d-%s", i, pad)
		if _, err := f.env.Svc.Remember(context.Background(), f.writer, service.RememberRequest{Slug: slug, Content: "x"}); err != nil {
			t.Fatalf("remember %d: %v", i, err)
		}
	}
	got := good.changes(n)
	for i, e := range got {
		if want := fmt.Sprintf("s/%03d-%s", i, pad); e.change.Slug != want {
			t.Fatalf("change %d: %s", i, e.change.Slug)
		}
	}
	if open := f.streams.Open(); open != 2 {
		t.Fatalf("%d streams open, want 2 (the stuck one blocked in its write)", open)
	}
	// The stuck client leaves: its blocked write fails and its stream ends.
	stuck.Close()
	good.resp.Body.Close()
	for i := 0; f.streams.Open() != 0; i++ {
		if i == 2000 {
			t.Fatalf("%d streams still open after their clients left", f.streams.Open())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
