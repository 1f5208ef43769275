package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

func autoCheckpoint(t *testing.T, s *Store, ws string) (workspace, control int) {
	t.Helper()
	h, err := s.workspace(context.Background(), ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.pool.writer.QueryRow("PRAGMA wal_autocheckpoint").Scan(&workspace); err != nil {
		t.Fatal(err)
	}
	if err := s.control.writer.QueryRow("PRAGMA wal_autocheckpoint").Scan(&control); err != nil {
		t.Fatal(err)
	}
	return workspace, control
}

// With a Cluster set, the writer of a workspace file never checkpoints on
// its own (the replicator must see every WAL frame first); the control
// database, which is not replicated, and every file of a default store keep
// SQLite's automatic checkpoints.
func TestReplicatedWriterLeavesCheckpointsToTheReplicator(t *testing.T) {
	for _, c := range []struct {
		replicated bool
		wantWS     int
	}{{false, 1000}, {true, 0}} {
		t.Run(fmt.Sprint("replicated=", c.replicated), func(t *testing.T) {
			var opts Options
			if c.replicated {
				opts.Cluster = hooks{}
			}
			s, err := Open(t.TempDir(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			put(t, s, ensure(t, s, "team", "alpha"), "a", "one")
			ws, ctl := autoCheckpoint(t, s, "team")
			if ws != c.wantWS || ctl != 1000 {
				t.Errorf("wal_autocheckpoint: workspace %d, control %d; want %d and 1000", ws, ctl, c.wantWS)
			}
		})
	}
}

// AfterCommit runs before any write is answered, at most once per batch
// (one call covers every batch committed before it started), beside the
// writer: the next batch commits while the previous one waits for it. Its
// failure is the answer of every write it covers: unavailable, although the
// writes are in the local file.
func TestAfterCommitGatesTheAnswers(t *testing.T) {
	var calls atomic.Int64
	var hook atomic.Pointer[func() error]
	setHook := func(f func() error) { hook.Store(&f) }
	setHook(func() error { return nil })
	s, err := Open(t.TempDir(), Options{Cluster: hooks{afterCommit: func(string) error {
		calls.Add(1)
		return (*hook.Load())()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "team", "alpha")

	// Held: the answer waits for the hook, while the next batch commits.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	setHook(func() error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	})
	held, next := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		put(t, s, ref, "held", "x")
	}()
	<-entered
	go func() {
		defer close(next)
		put(t, s, ref, "next", "y")
	}()
	committed := false
	for range 1000 { // bounded: the writer commits "next" while "held" waits
		if v, _, err := s.Get(context.Background(), ref, "next", 0); err == nil && v.Content == "y" {
			committed = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !committed {
		t.Fatal("the writer did not commit the next batch while AfterCommit held the previous one")
	}
	select {
	case <-held:
		t.Fatal("the write was answered while AfterCommit was still running")
	case <-next:
		t.Fatal("a later write was answered before AfterCommit covered it")
	default:
	}
	close(release)
	<-held
	<-next

	// Failing: every write it covers gets unavailable; the row is local.
	setHook(func() error { return errors.New("replica unreachable") })
	_, err = s.Append(context.Background(), ref, memory.Write{Slug: "lost", Title: "t", Content: "c", Agent: "a"})
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("Append with failing AfterCommit: %v, want unavailable", err)
	}
	if v, _, err := s.Get(context.Background(), ref, "lost", 0); err != nil || v.Content != "c" {
		t.Fatalf("the committed write is not in the local file: %+v %v", v, err)
	}

	// At most one call per batch: 32 concurrent writers.
	setHook(func() error { return nil })
	before, batches := calls.Load(), s.Stats().Batches
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() { put(t, s, ref, fmt.Sprintf("c%d", i), "x") })
	}
	wg.Wait()
	if got, most := calls.Load()-before, s.Stats().Batches-batches; got == 0 || got > most {
		t.Errorf("AfterCommit ran %d times for %d batches", got, most)
	}
}

// CloseWorkspace commits what is queued, runs BeforeClose between the last commit
// and closing the connections, and an opener in the meantime waits instead of
// opening a second writer on the file (invariant 1,
// docs/architecture.md#invariant-1-one-writer-per-workspace). Afterwards the
// workspace opens again with every write in it.
func TestCloseWorkspaceWaitsForOpeners(t *testing.T) {
	inBefore, release := make(chan struct{}), make(chan struct{})
	var closes atomic.Int64
	s, err := Open(t.TempDir(), Options{Cluster: hooks{beforeClose: func(string) {
		if closes.Add(1) == 1 {
			close(inBefore)
			<-release
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "team", "alpha")
	put(t, s, ref, "a", "before close")

	closed := make(chan error, 1)
	go func() { closed <- s.CloseWorkspace("team") }()
	<-inBefore
	got := make(chan error, 1)
	go func() {
		_, _, err := s.Get(context.Background(), ref, "a", 0)
		got <- err
	}()
	// The reader cannot get past the closing workspace while BeforeClose
	// holds it: give it half a second to (wrongly) open the file anew.
	select {
	case err := <-got:
		t.Fatalf("a reader opened the workspace while it was closing (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("CloseWorkspace: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Get after reopen: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting reader never got the reopened workspace")
	}
	put(t, s, ref, "a", "after reopen")
	if v, latest, err := s.Get(context.Background(), ref, "a", 0); err != nil || latest != 2 || v.Content != "after reopen" {
		t.Fatalf("after reopen: %+v latest %d %v", v, latest, err)
	}
}

// Writers racing CloseWorkspace either succeed (and their version is there)
// or get unavailable; versions stay gap-free.
func TestCloseWorkspaceUnderWrites(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for range 20 {
				_, err := s.Append(context.Background(), ref, memory.Write{Slug: "shared", Title: "t", Content: fmt.Sprint(g), Agent: "a"})
				switch {
				case err == nil:
					ok.Add(1)
				case memory.ErrorCode(err) == memory.CodeUnavailable:
				default:
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	for range 10 {
		if err := s.CloseWorkspace("team"); err != nil {
			t.Errorf("CloseWorkspace: %v", err)
		}
	}
	wg.Wait()
	_, latest, err := s.Get(context.Background(), ref, "shared", 0)
	if err != nil || int64(latest) != ok.Load() {
		t.Fatalf("latest version %d, acknowledged writes %d (err %v)", latest, ok.Load(), err)
	}
}

// BeforeOpen runs once per open however many callers want the workspace,
// a slow BeforeOpen of one workspace holds up no other, and a failing
// BeforeOpen or AfterOpen fails the open (no file, no writer; a file
// AfterOpen refused is closed through BeforeClose) until a later call
// succeeds.
func TestOpenHooks(t *testing.T) {
	slow, release := make(chan struct{}), make(chan struct{})
	var opens, afters, closes atomic.Int64 // "fast" opens only once "slow" is held
	var failBefore, failAfter atomic.Bool
	s, err := Open(t.TempDir(), Options{Cluster: hooks{
		beforeOpen: func(ctx context.Context, ws string) error {
			if failBefore.Load() {
				return memory.Errorf(memory.CodeUnavailable, "restore of %s failed", ws)
			}
			if ws == "slow" && opens.Load() == 0 {
				close(slow)
				<-release
			}
			opens.Add(1)
			return nil
		},
		afterOpen: func(ctx context.Context, ws string) error {
			afters.Add(1)
			if failAfter.Load() {
				return errors.New("register failed")
			}
			return nil
		},
		beforeClose: func(string) { closes.Add(1) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// EnsureProject opens (and creates) the workspace: one BeforeOpen.
	slowRef := memory.ProjectRef{Workspace: "slow", Project: "p"}
	ensured := make(chan error, 1)
	go func() { _, err := s.EnsureProject(context.Background(), slowRef); ensured <- err }()
	<-slow
	// While "slow" is being opened, another workspace opens and writes.
	fast := ensure(t, s, "fast", "p")
	put(t, s, fast, "a", "x")
	close(release)
	if err := <-ensured; err != nil {
		t.Fatal(err)
	}
	if err := s.CloseWorkspace("slow"); err != nil {
		t.Fatal(err)
	}
	before := opens.Load()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { put(t, s, slowRef, fmt.Sprint("s", i), "x") })
	}
	wg.Wait()
	if got := opens.Load() - before; got != 1 {
		t.Errorf("16 callers of a closed workspace ran BeforeOpen %d times, want 1", got)
	}

	for _, c := range []struct {
		name   string
		flag   *atomic.Bool
		closes int64 // BeforeClose runs for a file AfterOpen refused, which was open
	}{{"BeforeOpen", &failBefore, 0}, {"AfterOpen", &failAfter, 1}} {
		if err := s.CloseWorkspace("slow"); err != nil {
			t.Fatal(err)
		}
		c.flag.Store(true)
		closed := closes.Load()
		if _, err := s.Append(context.Background(), slowRef, memory.Write{Slug: "no", Title: "t", Content: "c", Agent: "a"}); err == nil {
			t.Errorf("%s failing: Append succeeded", c.name)
		}
		if got := closes.Load() - closed; got != c.closes {
			t.Errorf("%s failing: BeforeClose ran %d times, want %d", c.name, got, c.closes)
		}
		if n := len(s.Stats().Workspaces); n != 1 {
			t.Errorf("%s failing: %d workspaces open, want 1 (fast)", c.name, n)
		}
		c.flag.Store(false)
		put(t, s, slowRef, "yes", "c")
	}
	if _, _, err := s.Get(context.Background(), slowRef, "no", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("a write refused by a failing open is there: %v", err)
	}
}

// ProjectExists stands in for the control database: a project it knows
// opens (and creates) the workspace file without a control row; one it
// refuses is refused with its error.
func TestProjectExistsReplacesControl(t *testing.T) {
	known := memory.ProjectRef{Workspace: "elsewhere", Project: "p"}
	s, err := Open(t.TempDir(), Options{Cluster: hooks{projectExists: func(ctx context.Context, ref memory.ProjectRef) error {
		if ref == known {
			return nil
		}
		return memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	put(t, s, known, "a", "x")
	_, err = s.Append(context.Background(), memory.ProjectRef{Workspace: "elsewhere", Project: "q"}, memory.Write{Slug: "a", Title: "t", Content: "c", Agent: "a"})
	wantCode(t, err, memory.CodeNotFound)
}

// A failing BeforeCommit rolls the whole batch back: every write of it is
// answered with the error and none is in the file.
func TestBeforeCommitRefusesTheBatch(t *testing.T) {
	var refuse atomic.Bool
	s, err := Open(t.TempDir(), Options{Cluster: hooks{beforeCommit: func(string) error {
		if refuse.Load() {
			return errors.New("lease expired")
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "team", "alpha")
	put(t, s, ref, "kept", "x")
	refuse.Store(true)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := s.Append(context.Background(), ref, memory.Write{Slug: fmt.Sprint("r", i), Title: "t", Content: "c", Agent: "a"})
			if memory.ErrorCode(err) != memory.CodeUnavailable {
				t.Errorf("write %d with BeforeCommit refusing: %v, want unavailable", i, err)
			}
		})
	}
	wg.Wait()
	refuse.Store(false)
	for i := range 8 {
		if _, _, err := s.Get(context.Background(), ref, fmt.Sprint("r", i), 0); memory.ErrorCode(err) != memory.CodeNotFound {
			t.Errorf("refused write %d is in the file: %v", i, err)
		}
	}
	put(t, s, ref, "after", "x")
}

// With AckGather, a lone write is confirmed at once, however long the
// gather; after a confirmation covered two writes, the next waits for two
// (not for the gather's end) and covers both; the Observer is told each count.
func TestAckGatherWaitsForAsManyAsBefore(t *testing.T) {
	var calls atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	acks := make(chan int, 8)
	s, err := Open(t.TempDir(), Options{AckGather: time.Minute,
		Cluster: hooks{afterCommit: func(string) error {
			if calls.Add(1) == 2 { // the second call holds, so that two writes queue behind it
				close(entered)
				<-release
			}
			return nil
		}},
		Observer: ackObserver(func(writes int, waited time.Duration) {
			if waited <= 0 {
				t.Errorf("ReplicaAck with a wait of %s", waited)
			}
			acks <- writes
		})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "team", "alpha")
	// A bound far below the gather: a write that waits for it fails here.
	answered := func(done <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s waited for the gather of a minute", what)
		}
	}
	async := func(slug string) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			put(t, s, ref, slug, "x")
		}()
		return done
	}
	committed := func(slug string) {
		t.Helper()
		for range 1000 {
			if _, _, err := s.Get(context.Background(), ref, slug, 0); err == nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s was not committed", slug)
	}

	answered(async("lone"), "a lone write")
	held := async("held")
	<-entered
	c, d := async("c"), async("d")
	committed("c")
	committed("d")
	close(release)
	answered(held, "the held write")
	answered(c, "c")
	answered(d, "d")

	e := async("e")
	committed("e")
	time.Sleep(50 * time.Millisecond) // e must still wait: the last confirmation covered two
	select {
	case <-e:
		t.Fatal("e was confirmed alone after a confirmation of two")
	default:
	}
	f := async("f")
	answered(e, "e")
	answered(f, "f")
	if got := calls.Load(); got != 4 {
		t.Errorf("AfterCommit ran %d times, want 4 (lone, held, c+d, e+f)", got)
	}
	var got []int
	for range 4 { // ReplicaAck runs after the answers
		select {
		case w := <-acks:
			got = append(got, w)
		case <-time.After(30 * time.Second):
			t.Fatalf("ReplicaAck counts %v, then no more", got)
		}
	}
	if fmt.Sprint(got) != "[1 1 2 2]" {
		t.Errorf("ReplicaAck counts %v, want [1 1 2 2]", got)
	}
}
