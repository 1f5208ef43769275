package changehub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// fakeFeed is an audit log in memory with one workspace file per name.
type fakeFeed struct {
	mu       sync.Mutex
	rows     map[string][]memory.FeedRow
	identity map[string]string
	wakes    map[string][]*func()
	reads    atomic.Int64 // reads that are not EndOnly
	fail     atomic.Int64 // the next fail reads answer unavailable
}

func newFakeFeed() *fakeFeed {
	return &fakeFeed{rows: map[string][]memory.FeedRow{}, identity: map[string]string{}, wakes: map[string][]*func(){}}
}

func (f *fakeFeed) write(ws, project, slug string) {
	f.mu.Lock()
	id := int64(len(f.rows[ws]) + 1)
	f.rows[ws] = append(f.rows[ws], memory.FeedRow{ID: id, Project: project, Slug: slug, Version: 1, Action: "remember", At: time.Unix(0, id)})
	wakes := append([]*func(){}, f.wakes[ws]...)
	f.mu.Unlock()
	for _, w := range wakes {
		(*w)()
	}
}

// replace gives ws a new file: a new identity and no rows.
func (f *fakeFeed) replace(ws string) {
	f.mu.Lock()
	f.identity[ws] = fmt.Sprintf("file-%d", time.Now().UnixNano())
	f.rows[ws] = nil
	f.mu.Unlock()
}

func (f *fakeFeed) OnCommit(wss []string, wake func()) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &wake
	for _, ws := range wss {
		f.wakes[ws] = append(f.wakes[ws], p)
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, ws := range wss {
			for i, w := range f.wakes[ws] {
				if w == p {
					f.wakes[ws] = append(f.wakes[ws][:i], f.wakes[ws][i+1:]...)
					break
				}
			}
		}
	}
}

func (f *fakeFeed) FeedRead(_ context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !q.EndOnly {
		f.reads.Add(1)
		if f.fail.Load() > 0 {
			f.fail.Add(-1)
			return memory.FeedPage{}, memory.Errorf(memory.CodeUnavailable, "owner moving")
		}
	}
	page := memory.FeedPage{Identity: f.identity[ws]}
	if q.Identity != "" && q.Identity != page.Identity {
		return memory.FeedPage{}, memory.Errorf(memory.CodeInvalid, "expired")
	}
	rows := f.rows[ws]
	if n := len(rows); n > 0 {
		page.EndID, page.EndStamp = rows[n-1].ID, rows[n-1].At.UnixNano()
	}
	if q.EndOnly {
		page.Complete = true
		return page, nil
	}
	want := map[string]bool{}
	for _, p := range q.Projects {
		want[p.Project] = true
	}
	for _, r := range rows[q.After:] {
		if !want[r.Project] {
			continue
		}
		if len(page.Rows) == q.Limit {
			return page, nil
		}
		page.Rows = append(page.Rows, r)
	}
	page.Complete = true
	return page, nil
}

// heard collects a watcher's rows.
type heard struct {
	mu      sync.Mutex
	slugs   []string
	resyncs int
}

func (h *heard) fn(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.Resync {
		h.resyncs++
	}
	for _, r := range ev.Rows {
		h.slugs = append(h.slugs, r.Slug)
	}
}

func (h *heard) wait(t *testing.T, n int) []string {
	t.Helper()
	for range 1000 { // up to 10 s
		h.mu.Lock()
		got := append([]string(nil), h.slugs...)
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("heard %v, want %d rows", h.slugs, n)
	return nil
}

// TestOneReadServesEveryWatcher: a thousand watchers of one workspace, one
// write: each hears it once, and it cost one feed read, not a thousand.
func TestOneReadServesEveryWatcher(t *testing.T) {
	f := newFakeFeed()
	f.write("acme", "app", "before") // before Watch: nobody hears it
	h := New(f, Options{})
	const n = 1000
	ws := make([]*heard, n)
	var stops []func()
	for i := range n {
		ws[i] = &heard{}
		stops = append(stops, h.Watch("acme", "app", ws[i].fn))
	}
	f.write("acme", "app", "x")
	for i := range n {
		if got := ws[i].wait(t, 1); len(got) != 1 || got[0] != "x" {
			t.Fatalf("watcher %d heard %v, want [x]", i, got)
		}
	}
	if r := f.reads.Load(); r != 1 {
		t.Errorf("%d feed reads for one write to %d watchers, want 1", r, n)
	}
	if h.Readers() != 1 || h.Watchers() != n {
		t.Errorf("readers %d watchers %d, want 1 and %d", h.Readers(), h.Watchers(), n)
	}
	for _, stop := range stops {
		stop()
	}
	if h.Readers() != 0 || h.Watchers() != 0 {
		t.Errorf("after every stop: readers %d watchers %d, want 0", h.Readers(), h.Watchers())
	}
}

// TestWatchersHearOnlyTheirProject and in commit order, across pages.
func TestWatchersHearOnlyTheirProject(t *testing.T) {
	f := newFakeFeed()
	h := New(f, Options{PageSize: 3})
	app, web := &heard{}, &heard{}
	defer h.Watch("acme", "app", app.fn)()
	defer h.Watch("acme", "web", web.fn)()
	var want []string
	for i := range 20 {
		s := fmt.Sprintf("s%02d", i)
		if i%3 == 0 {
			f.write("acme", "web", s)
			continue
		}
		f.write("acme", "app", s)
		want = append(want, s)
	}
	got := app.wait(t, len(want))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("app heard %v, want %v", got, want)
	}
	if got := web.wait(t, 7); len(got) != 7 || got[0] != "s00" || got[6] != "s18" {
		t.Errorf("web heard %v", got)
	}
}

// TestFailedReadsRetryWithoutLoss: reads that fail (a failover) are
// retried from the same position; nothing is lost and no resync is sent.
func TestFailedReadsRetryWithoutLoss(t *testing.T) {
	f := newFakeFeed()
	h := New(f, Options{Retry: 5 * time.Millisecond})
	w := &heard{}
	defer h.Watch("acme", "app", w.fn)()
	f.fail.Store(3)
	f.write("acme", "app", "a")
	f.write("acme", "app", "b")
	if got := w.wait(t, 2); fmt.Sprint(got) != "[a b]" || w.resyncs != 0 {
		t.Errorf("heard %v with %d resyncs, want [a b] and none", got, w.resyncs)
	}
}

// TestReplacedFileResyncs: a workspace file replaced under the reader
// (its position expired) makes every watcher resync, and the reader goes
// on from the new file's end.
func TestReplacedFileResyncs(t *testing.T) {
	f := newFakeFeed()
	f.identity["acme"] = "first"
	h := New(f, Options{})
	w := &heard{}
	defer h.Watch("acme", "app", w.fn)()
	f.write("acme", "app", "a")
	w.wait(t, 1)
	f.replace("acme")
	f.write("acme", "app", "b") // in the new file: its end after the resync
	for range 1000 {
		w.mu.Lock()
		r := w.resyncs
		w.mu.Unlock()
		if r > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w.resyncs != 1 {
		t.Fatalf("resyncs %d, want 1", w.resyncs)
	}
	f.write("acme", "app", "c")
	if got := w.wait(t, 2); fmt.Sprint(got) != "[a c]" {
		t.Errorf("heard %v, want [a c]", got)
	}
}

// TestStopEndsCalls: after stop returned, fn is never called again, even
// with writes racing the stop (run with -race).
func TestStopEndsCalls(t *testing.T) {
	f := newFakeFeed()
	h := New(f, Options{})
	for i := range 50 {
		var stopped atomic.Bool
		var late atomic.Int64
		stop := h.Watch("acme", "app", func(Event) {
			if stopped.Load() {
				late.Add(1)
			}
		})
		go f.write("acme", "app", fmt.Sprint(i))
		stop()
		stopped.Store(true)
		f.write("acme", "app", "after")
		if late.Load() != 0 {
			t.Fatalf("round %d: fn called after stop", i)
		}
	}
}

// TestDerivedOncePerBatch: what watchers derive from a batch under one
// key is made once and shared by every watcher of the project; another
// key is made apart.
func TestDerivedOncePerBatch(t *testing.T) {
	f := newFakeFeed()
	h := New(f, Options{})
	type keyA struct{}
	type keyB struct{}
	var madeA, madeB atomic.Int64
	const n = 50
	var got sync.WaitGroup
	got.Add(n)
	results := make([]any, n)
	for i := range n {
		stop := h.Watch("acme", "app", func(ev Event) {
			results[i] = ev.Derived(keyA{}, func() any { madeA.Add(1); return &[]string{ev.Rows[0].Slug} })
			if i%2 == 0 {
				ev.Derived(keyB{}, func() any { madeB.Add(1); return 0 })
			}
			got.Done()
		})
		defer stop()
	}
	f.write("acme", "app", "x")
	got.Wait()
	if madeA.Load() != 1 || madeB.Load() != 1 {
		t.Fatalf("key A made %d times, key B %d times for one batch; want once each", madeA.Load(), madeB.Load())
	}
	for i := range n {
		if results[i] != results[0] {
			t.Fatalf("watcher %d got its own result; want the shared one", i)
		}
	}
}
