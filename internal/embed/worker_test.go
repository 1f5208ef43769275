package embed

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/reqlog/logtest"
	"munin/internal/store"
)

// The store implements the worker's contract.
var _ Store = (*store.Store)(nil)

// syncBuf collects log lines written from many goroutines.
type syncBuf = logtest.Buffer

type fixture struct {
	st   *store.Store
	dir  string
	ep   *embedtest.Server
	log  *syncBuf
	idle chan string
	seen map[string]int // idle events read from idle but not yet waited for
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	return &fixture{st: st, dir: dir, ep: ep, log: &syncBuf{}, idle: make(chan string, 64), seen: map[string]int{}}
}

// worker starts a worker for model with millisecond backoff; it is closed
// at the end of the test.
func (f *fixture) worker(t *testing.T, model string, opts Options) *Worker {
	t.Helper()
	c, err := NewClient(ClientOptions{URL: f.ep.URL, Model: model, Key: "the-secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(f.log, nil))
	opts.MinBackoff, opts.MaxBackoff, opts.Gather = time.Millisecond, 5*time.Millisecond, time.Millisecond
	w := NewWorker(f.st, c, opts)
	w.onIdle = func(ws string) { f.idle <- ws }
	t.Cleanup(w.Close)
	return w
}

func (f *fixture) write(t *testing.T, ref memory.ProjectRef, n int, prefix string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.st.EnsureProject(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		slug := fmt.Sprintf("%s-%03d", prefix, i)
		if _, err := f.st.Append(ctx, ref, memory.Write{Slug: slug, Title: "T " + slug, Content: "content of " + slug, Agent: "a"}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitIdle waits until workspace ws's goroutine found nothing missing.
func (f *fixture) waitIdle(t *testing.T, ws string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if f.seen[ws] > 0 {
			f.seen[ws]--
			return
		}
		select {
		case got := <-f.idle:
			f.seen[got]++
		case <-timeout:
			t.Fatalf("workspace %s never became idle; log:\n%s", ws, f.log.String())
		}
	}
}

// waitMissing waits (bounded) through idle events until ws has want missing.
func (f *fixture) waitMissing(t *testing.T, ws, model string, want int) {
	t.Helper()
	for range 100 {
		f.waitIdle(t, ws)
		if f.missing(t, ws, model) == want {
			return
		}
	}
	t.Fatalf("%d missing, want %d", f.missing(t, ws, model), want)
}

// failedCalls watches a worker's calls (Options.OnCall) for failures.
type failedCalls chan struct{}

func newFailedCalls() failedCalls { return make(chan struct{}, 100) }

func (fc failedCalls) onCall(_ int, err error) {
	if err != nil {
		select {
		case fc <- struct{}{}:
		default: // enough seen
		}
	}
}

// wait waits (bounded) for n failed calls.
func (fc failedCalls) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-fc:
		case <-time.After(20 * time.Second):
			t.Fatal("no failed call")
		}
	}
}

func (f *fixture) missing(t *testing.T, ws, model string) int {
	t.Helper()
	n, err := f.st.CountMissingVectors(context.Background(), ws, model)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Start embeds every workspace's live versions in batches of at most 32,
// stores vectors the endpoint computed for each entry's text, and tells
// OnStored about each batch.
func TestWorkerEmbedsEverything(t *testing.T) {
	f := newFixture(t)
	a, b := memory.ProjectRef{Workspace: "w1", Project: "a"}, memory.ProjectRef{Workspace: "w2", Project: "b"}
	f.write(t, a, 70, "e")
	f.write(t, b, 5, "f")
	var mu sync.Mutex
	stored := 0
	w := f.worker(t, "m1", Options{OnStored: func(vs []memory.Vector) { mu.Lock(); stored += len(vs); mu.Unlock() }})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitIdle(t, "w1")
	f.waitIdle(t, "w2")
	if n := f.missing(t, "w1", "m1") + f.missing(t, "w2", "m1"); n != 0 {
		t.Fatalf("%d still missing", n)
	}
	if f.ep.MaxBatch() > memory.MaxEmbedBatch || f.ep.Calls() < 3 {
		t.Fatalf("batches: %d calls, largest %d", f.ep.Calls(), f.ep.MaxBatch())
	}
	mu.Lock()
	if stored != 75 {
		t.Fatalf("OnStored saw %d vectors, want 75", stored)
	}
	mu.Unlock()
	vs, err := f.st.Vectors(context.Background(), a, "m1")
	if err != nil || len(vs) != 70 {
		t.Fatalf("Vectors = %d, %v", len(vs), err)
	}
	want := embedtest.Vector(memory.EmbedText("T "+vs[0].Slug, nil, "content of "+vs[0].Slug), 8)
	for i, x := range want {
		if vs[0].Values[i] != float32(x) {
			t.Fatalf("vector of %s = %v, want %v", vs[0].Slug, vs[0].Values, want)
		}
	}
	if st := w.Stats(); st.Embedded != 75 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}

	// A write wakes the worker; it embeds the written slugs.
	f.write(t, a, 71, "e") // e-000..e-069 get version 2, e-070 is new
	for i := range 71 {
		w.Written(a, fmt.Sprintf("e-%03d", i))
	}
	f.waitMissing(t, "w1", "m1", 0) // the goroutine may go idle between two Written calls
}

// Written embeds the slugs it names and scans nothing: keeping up costs a
// key lookup per write, not a pass over the workspace.
func TestWorkerWrittenIsTargeted(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 10, "e")
	w := f.worker(t, "m", Options{})
	w.Written(ref, "e-003")
	w.Written(ref, "no-such-slug")
	f.waitMissing(t, "w", "m", 9)
	vs, err := f.st.Vectors(context.Background(), ref, "m")
	if err != nil || len(vs) != 1 || vs[0].Slug != "e-003" {
		t.Fatalf("vectors after Written(e-003) = %+v, %v", vs, err)
	}
	w.Notify("w") // a scan finds the rest
	f.waitMissing(t, "w", "m", 0)
}

// An endpoint that fails in any way stores nothing, is retried with
// backoff, logged (without the key) and counted; once it answers again,
// everything is embedded.
func TestWorkerRetriesGarbage(t *testing.T) {
	for _, m := range []struct {
		name string
		mode embedtest.Mode
	}{
		{"500", embedtest.Status500}, {"html", embedtest.HTML}, {"nan", embedtest.NaN},
		{"dims", embedtest.WrongDim}, {"count", embedtest.WrongCount}, {"huge", embedtest.Huge},
	} {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t)
			ref := memory.ProjectRef{Workspace: "w", Project: "p"}
			f.write(t, ref, 3, "e")
			f.ep.SetMode(m.mode)
			fc := newFailedCalls()
			w := f.worker(t, "m", Options{OnCall: fc.onCall})
			w.Notify("w")
			fc.wait(t, 3) // failed, retried, failed again
			if n := f.missing(t, "w", "m"); n != 3 {
				t.Fatalf("garbage stored: %d missing, want 3", n)
			}
			if b, err := w.Backlog(context.Background()); err != nil || b != 3 {
				t.Fatalf("backlog = %d, want 3", b)
			}
			f.ep.SetMode(embedtest.OK)
			f.waitIdle(t, "w")
			if n := f.missing(t, "w", "m"); n != 0 {
				t.Fatalf("%d missing after recovery", n)
			}
			st := w.Stats()
			if st.Errors < 3 {
				t.Fatalf("stats %+v", st)
			}
			log := f.log.String()
			if !strings.Contains(log, "embedding failed; will retry") {
				t.Fatalf("failure not logged:\n%s", log)
			}
			if strings.Contains(log, "the-secret-key") {
				t.Fatal("the log shows the endpoint's key")
			}
		})
	}
}

// A text the endpoint refuses for good (4xx) is skipped; the rest of its
// batch is embedded and does not wait behind it.
func TestWorkerSkipsRefusedText(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 4, "e")
	if _, err := f.st.Append(context.Background(), ref, memory.Write{Slug: "bad", Title: "POISON", Content: "x", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	f.ep.SetMode(embedtest.Poison)
	w := f.worker(t, "m", Options{})
	w.Notify("w")
	f.waitIdle(t, "w")
	if n := f.missing(t, "w", "m"); n != 1 {
		t.Fatalf("%d missing, want only the refused one", n)
	}
	if st := w.Stats(); st.Skipped != 1 || st.Embedded != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// A model change re-embeds in the background; a restart with the same
// model recomputes nothing.
func TestWorkerModelChangeAndRestart(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 40, "e")
	w1 := f.worker(t, "m1", Options{})
	if err := w1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitIdle(t, "w")
	w1.Close()

	// Restart: the same model finds nothing to do.
	calls := f.ep.Calls()
	w2 := f.worker(t, "m1", Options{})
	if err := w2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitIdle(t, "w")
	w2.Close()
	if f.ep.Calls() != calls {
		t.Fatalf("restart called the endpoint %d times", f.ep.Calls()-calls)
	}

	// Another model: everything is embedded again.
	w3 := f.worker(t, "m2", Options{})
	if err := w3.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitIdle(t, "w")
	vs, err := f.st.Vectors(context.Background(), ref, "m2")
	if err != nil || len(vs) != 40 {
		t.Fatalf("m2 vectors = %d, %v", len(vs), err)
	}
}

// Fill embeds synchronously with progress; a dead endpoint ends it with an error.
func TestWorkerFill(t *testing.T) {
	f := newFixture(t)
	ref := memory.ProjectRef{Workspace: "w", Project: "p"}
	f.write(t, ref, 50, "e")
	w := f.worker(t, "m", Options{})
	f.ep.SetMode(embedtest.Status500)
	if _, err := w.Fill(context.Background(), "w", nil); err == nil {
		t.Fatal("Fill with a failing endpoint: no error")
	}
	f.ep.SetMode(embedtest.OK)
	got := 0
	n, err := w.Fill(context.Background(), "w", func(k int) { got += k })
	if err != nil || n != 50 || got != 50 || f.missing(t, "w", "m") != 0 {
		t.Fatalf("Fill = %d, %v (progress %d)", n, err, got)
	}
}

// Many writers telling the worker at once (run with -race): every slug
// ends up embedded at its latest version.
func TestWorkerConcurrentWrites(t *testing.T) {
	f := newFixture(t)
	refs := []memory.ProjectRef{{Workspace: "w", Project: "a"}, {Workspace: "w", Project: "b"}, {Workspace: "v", Project: "c"}}
	for _, ref := range refs {
		if _, err := f.st.EnsureProject(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
	w := f.worker(t, "m", Options{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref := refs[g%len(refs)]
			for i := range 30 {
				slug := fmt.Sprintf("s%02d", (g*7+i)%40)
				if _, err := f.st.Append(context.Background(), ref, memory.Write{Slug: slug, Title: "t", Content: fmt.Sprint("c ", g, i), Agent: "a"}); err != nil {
					t.Error(err)
					return
				}
				w.Written(ref, slug)
			}
		}()
	}
	wg.Wait()
	f.waitMissing(t, "w", "m", 0)
	f.waitMissing(t, "v", "m", 0)
	for _, ref := range refs {
		vs, err := f.st.Vectors(context.Background(), ref, "m")
		if err != nil || len(vs) == 0 {
			t.Fatalf("%s: %d vectors, %v", ref, len(vs), err)
		}
	}
}
