package embed

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
)

// 401, 403 and 404 say the endpoint is misconfigured (a rotated token, a
// wrong URL or model), not that it refuses the texts: the worker retries
// with backoff, skips nothing, and once the endpoint answers again (the
// token rotated back in) every entry is embedded without a restart.
func TestWorkerOutlastsEndpointMisconfiguration(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFixture(t)
			ref := memory.ProjectRef{Workspace: "w", Project: "p"}
			f.write(t, ref, 5, "e")
			f.ep.Fail(status)
			fc := newFailedCalls()
			w := f.worker(t, "m", Options{OnCall: fc.onCall})
			w.Notify("w")
			fc.wait(t, 3) // failed, retried, failed again, and again
			if st := w.Stats(); st.Skipped != 0 {
				t.Fatalf("stats %+v: entries skipped as refused after %d", st, status)
			}
			f.ep.SetMode(embedtest.OK) // the token is valid again
			f.waitMissing(t, "w", "m", 0)
			if st := w.Stats(); st.Skipped != 0 || st.Embedded != 5 {
				t.Fatalf("stats %+v, want 5 embedded and none skipped", st)
			}
		})
	}
}

// pauses records the worker's backoff pauses instead of sleeping them,
// with how many calls had failed before each.
type pauses struct {
	mu     sync.Mutex
	d      []time.Duration
	failed []int
	fails  int
	enough chan struct{}
	want   int
}

func newPauses(w *Worker, want int) *pauses {
	p := &pauses{enough: make(chan struct{}), want: want}
	w.sleep = func(ctx context.Context, d time.Duration) bool {
		p.mu.Lock()
		p.d = append(p.d, d)
		p.failed = append(p.failed, p.fails)
		if len(p.d) == p.want {
			close(p.enough)
		}
		p.mu.Unlock()
		return ctx.Err() == nil
	}
	return p
}

func (p *pauses) onCall(_ int, err error) {
	if err != nil {
		p.mu.Lock()
		p.fails++
		p.mu.Unlock()
	}
}

// check asserts that pause i followed failure i+1 and is MinBackoff
// doubled i times, at most MaxBackoff: never zero, growing.
func (p *pauses) check(t *testing.T, n int, minB, maxB time.Duration) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.d) < n {
		t.Fatalf("%d pauses, want %d: %v", len(p.d), n, p.d)
	}
	want := minB
	for i := range n {
		if p.d[i] != want || p.d[i] <= 0 {
			t.Fatalf("pauses %v: pause %d is %v, want %v (from %v doubling up to %v)", p.d, i, p.d[i], want, minB, maxB)
		}
		if p.failed[i] != i+1 {
			t.Fatalf("pause %d came after %d failed calls, want %d: a retry without a pause", i, p.failed[i], i+1)
		}
		want = min(2*want, maxB)
	}
}

// The worker pauses after every failed call, MinBackoff first, doubling up
// to MaxBackoff; Fill uses the same backoff.
func TestWorkerBacksOff(t *testing.T) {
	const minB, maxB = time.Second, 8 * time.Second
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 3, "e")
	f.ep.SetMode(embedtest.Status500)
	var p *pauses
	w := f.worker(t, "m", Options{OnCall: func(n int, err error) { p.onCall(n, err) }})
	w.opts.MinBackoff, w.opts.MaxBackoff = minB, maxB
	p = newPauses(w, 6)
	w.Notify("w")
	select {
	case <-p.enough:
	case <-time.After(20 * time.Second):
		t.Fatalf("no 6 pauses; stats %+v", w.Stats())
	}
	w.Close()
	p.check(t, 6, minB, maxB) // 1, 2, 4, 8, 8, 8 s

	f2 := newFixture(t)
	f2.write(t, ref, 3, "e")
	f2.ep.SetMode(embedtest.Status500)
	w2 := f2.worker(t, "m", Options{OnCall: func(n int, err error) { p.onCall(n, err) }})
	w2.opts.MinBackoff, w2.opts.MaxBackoff = minB, maxB
	p = newPauses(w2, fillAttempts-1)
	if _, err := w2.Fill(context.Background(), "w", nil); err == nil {
		t.Fatal("Fill with a failing endpoint: no error")
	}
	p.check(t, fillAttempts-1, minB, maxB)
}

// Close returns promptly while a call hangs, and the call in flight is
// cancelled: the endpoint sees its client go away.
func TestWorkerCloseCancelsCall(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 1, "e")
	f.ep.SetMode(embedtest.Block)
	c, err := NewClient(ClientOptions{URL: f.ep.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	// Not f.worker: its cleanup would Close again, and hang if Close is broken.
	w := NewWorker(f.st, c, Options{Gather: -1})
	w.Notify("w")
	select {
	case <-f.ep.Blocked():
	case <-time.After(20 * time.Second):
		t.Fatal("the worker never called the endpoint")
	}
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s while a call hung")
	}
	select {
	case <-f.ep.Cancelled():
	case <-time.After(10 * time.Second):
		t.Fatal("Close returned, but the call in flight was not cancelled")
	}
	w.Notify("w") // after Close: nothing, no panic
}
