package embed

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
)

// An endpoint that hangs costs the worker no more than the client's
// timeout per call: each call that runs out is counted as an error, logged
// with "will retry", and retried with backoff; nothing is stored meanwhile,
// and once the endpoint answers again every entry is embedded.
func TestWorkerRetriesTimeouts(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 5, "e")
	f.ep.SetMode(embedtest.Block)
	c, err := NewClient(ClientOptions{URL: f.ep.URL, Model: "m", Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var timeouts atomic.Int64
	timedOut := make(chan struct{}, 100)
	w := NewWorker(f.st, c, Options{
		Logger:     slog.New(slog.NewTextHandler(f.log, nil)),
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Gather: time.Millisecond,
		OnCall: func(_ int, err error) {
			if errors.Is(err, context.DeadlineExceeded) {
				timeouts.Add(1)
				select {
				case timedOut <- struct{}{}:
				default:
				}
			}
		},
	})
	w.onIdle = func(ws string) { f.idle <- ws }
	t.Cleanup(w.Close)
	w.Notify("w")
	for range 3 { // timed out, retried, timed out again, and again
		select {
		case <-timedOut:
		case <-time.After(20 * time.Second):
			t.Fatalf("no timed-out call; stats %+v, log:\n%s", w.Stats(), f.log.String())
		}
	}
	if n := f.missing(t, "w", "m"); n != 5 {
		t.Fatalf("%d missing while the endpoint hangs, want 5", n)
	}
	if st := w.Stats(); st.Errors < 3 || st.Embedded != 0 {
		t.Fatalf("stats while the endpoint hangs: %+v, want at least 3 errors and nothing embedded", st)
	}
	log := f.log.String()
	if !strings.Contains(log, "embedding failed; will retry") || !strings.Contains(log, "deadline exceeded") {
		t.Fatalf("the timeouts are not logged:\n%s", log)
	}

	f.ep.SetMode(embedtest.OK)
	f.waitIdle(t, "w")
	if n := f.missing(t, "w", "m"); n != 0 {
		t.Fatalf("%d missing after the endpoint answers again", n)
	}
	if st := w.Stats(); st.Embedded != 5 || st.Errors < timeouts.Load() {
		t.Fatalf("stats %+v after recovery (%d timeouts seen), want 5 embedded and every timeout counted", st, timeouts.Load())
	}
}
