package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// ackedStore opens a store in cluster mode at dir whose Cluster.AfterCommit
// runs the function set last (nil: it confirms at once).
func ackedStore(t *testing.T, dir string) (*Store, func(func() error)) {
	t.Helper()
	var hook atomic.Pointer[func() error]
	s, err := Open(dir, Options{Cluster: hooks{afterCommit: func(string) error {
		if f := hook.Load(); f != nil && *f != nil {
			return (*f)()
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, func(f func() error) { hook.Store(&f) }
}

// listen counts the commit signal's wakes for workspace ws of s.
func listen(t *testing.T, s *Store, ws string) chan struct{} {
	t.Helper()
	woken := make(chan struct{}, 100)
	t.Cleanup(s.OnCommit([]string{ws}, func() { woken <- struct{}{} }))
	return woken
}

// unwoken fails if the signal woke anybody once every commit marked so
// far was dispatched.
func unwoken(t *testing.T, woken chan struct{}, what string) {
	t.Helper()
	waitFor(t, "the dispatcher to settle", hubSettled)
	if n := len(woken); n != 0 {
		t.Fatalf("%s: the commit signal woke %d times", what, n)
	}
}

// replaceFile closes workspace ws of s and puts the file src in its place
// (a takeover that restores a replica, a restore of a backup); src ""
// leaves no file.
func replaceFile(t *testing.T, s *Store, ws, src string) {
	t.Helper()
	if err := s.CloseWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(s.WorkspaceFile(ws) + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if src == "" {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.WorkspaceFile(ws), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFeedWaitsForTheAcknowledgement: in cluster mode a batch committed in
// the owner's file but not yet confirmed by the replica is neither in the
// feed (rows, end, EndOnly) nor announced by the commit signal; once
// confirmed, both show it.
func TestFeedWaitsForTheAcknowledgement(t *testing.T) {
	s, setHook := ackedStore(t, t.TempDir())
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "first", "x")
	before := feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	woken := listen(t, s, "ws")

	entered, release := make(chan struct{}), make(chan struct{})
	var enter, open sync.Once
	unhold := func() { open.Do(func() { close(release) }) }
	t.Cleanup(unhold) // a failing assertion must not leave the acker held
	setHook(func() error {
		enter.Do(func() {
			close(entered)
			<-release
		})
		return nil
	})
	held := make(chan error, 1)
	go func() {
		_, err := s.Append(fctx, ref, memory.Write{Slug: "held", Title: "t", Content: "x", Agent: "tester"})
		held <- err
	}()
	<-entered
	if v, _, err := s.Get(fctx, ref, "held", 0); err != nil || v.Content != "x" {
		t.Fatalf("the held batch is not committed in the local file: %+v %v", v, err)
	}
	page := feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	if got := feedLines(page.Rows); !slices.Equal(got, []string{"p:remember:first"}) || page.EndID != before.EndID {
		t.Fatalf("feed while the confirmation is held: %v end %d, want first alone and end %d", got, page.EndID, before.EndID)
	}
	if end := feedOf(t, s, "ws", memory.FeedQuery{EndOnly: true}, "p"); end.EndID != before.EndID {
		t.Fatalf("since=now while the confirmation is held: end %d, want %d", end.EndID, before.EndID)
	}
	unwoken(t, woken, "a batch not yet confirmed")

	unhold()
	if err := <-held; err != nil {
		t.Fatalf("the held write, confirmed: %v", err)
	}
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after the confirmation")
	}
	page = feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	if got := feedLines(page.Rows); !slices.Equal(got, []string{"p:remember:first", "p:remember:held"}) || page.EndID <= before.EndID {
		t.Fatalf("feed after the confirmation: %v end %d", got, page.EndID)
	}
}

// TestFeedLeavesOutAFailedConfirmation: a batch whose confirmation failed
// (its callers got unavailable) is in the owner's file but not in the feed
// and wakes nobody. If the owner gives the workspace up, its successor
// restores the replica without it, and a cursor read meanwhile reads on
// there (it never pointed past the replica). If the owner keeps the
// workspace, the next confirmation covers it (the replica copies the file
// in order), and then the feed shows it.
func TestFeedLeavesOutAFailedConfirmation(t *testing.T) {
	s, setHook := ackedStore(t, t.TempDir())
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "x")
	replica := filepath.Join(t.TempDir(), "replica.db") // what the replica holds
	if _, err := rawDB(t, s.WorkspaceFile("ws")).Exec(`VACUUM INTO ?`, replica); err != nil {
		t.Fatal(err)
	}
	woken := listen(t, s, "ws")

	setHook(func() error { return errors.New("replica unreachable") })
	_, err := s.Append(fctx, ref, memory.Write{Slug: "lost", Title: "t", Content: "x", Agent: "tester"})
	wantCode(t, err, memory.CodeUnavailable)
	if v, _, err := s.Get(fctx, ref, "lost", 0); err != nil || v.Content != "x" {
		t.Fatalf("the unconfirmed batch is not in the local file: %+v %v", v, err)
	}
	page := feedOf(t, s, "ws", memory.FeedQuery{}, "p")
	if got := feedLines(page.Rows); !slices.Equal(got, []string{"p:remember:a"}) {
		t.Fatalf("feed after a failed confirmation: %v, want a alone", got)
	}
	unwoken(t, woken, "a failed confirmation")
	last := page.Rows[len(page.Rows)-1]
	pos := memory.FeedQuery{Identity: page.Identity, After: last.ID, Stamp: last.At.UnixNano()}

	// The owner steps down; the successor restores the replica.
	setHook(nil)
	replaceFile(t, s, "ws", replica)
	put(t, s, ref, "next", "x")
	if got := feedLines(feedOf(t, s, "ws", pos, "p").Rows); !slices.Equal(got, []string{"p:remember:next"}) {
		t.Fatalf("the cursor read before the takeover, after it: %v, want next alone", got)
	}
	if _, _, err := s.Get(fctx, ref, "lost", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("the unconfirmed write after the restore: %v, want not_found", err)
	}

	// The owner keeps the workspace: a later confirmation covers the batch.
	page = feedOf(t, s, "ws", pos, "p")
	last = page.Rows[len(page.Rows)-1]
	pos = memory.FeedQuery{Identity: page.Identity, After: last.ID, Stamp: last.At.UnixNano()}
	setHook(func() error { return errors.New("replica unreachable") })
	_, err = s.Append(fctx, ref, memory.Write{Slug: "late", Title: "t", Content: "x", Agent: "tester"})
	wantCode(t, err, memory.CodeUnavailable)
	if got := feedOf(t, s, "ws", pos, "p").Rows; len(got) != 0 {
		t.Fatalf("feed after a failed confirmation: %v, want nothing new", feedLines(got))
	}
	setHook(nil)
	put(t, s, ref, "covering", "x")
	if got := feedLines(feedOf(t, s, "ws", pos, "p").Rows); !slices.Equal(got, []string{"p:remember:late", "p:remember:covering"}) {
		t.Fatalf("feed after a later confirmation: %v, want late, covering", got)
	}
}
