package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"munin/internal/changestream"
	"munin/internal/changestream/ssetest"
	"munin/internal/service"
)

// TestStuckStreamHoldsBackNoWriterAndNoOtherStream: over the real service,
// a client that opens a stream and never reads fills its socket buffers,
// and its stream blocks in a write (its write timeout is an hour here). An
// agent's remembers all return meanwhile, and another stream receives every
// change. Counted, not timed.
func TestStuckStreamHoldsBackNoWriterAndNoOtherStream(t *testing.T) {
	const n = 300 // ~120 KB of events: several times what the buffers hold
	f := newStreamFixture(t, changestream.Options{WriteTimeout: time.Hour, PageSize: 50})
	srv := ssetest.ServeSmall(t, f.handler)
	stuck := ssetest.Stuck(t, srv, "/api/v1/changes/stream", "Authorization", "Bearer "+f.reader)
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
