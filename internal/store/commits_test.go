package store

import (
	"context"
	"testing"
	"time"

	"munin/internal/memory"
)

// waitFor polls cond for up to 10 s (the hub's dispatcher runs on its own
// goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestOnCommit: a listener is woken after a commit of audit rows in its
// workspaces, not by another workspace's commit nor by a batch without an
// audit row (a search-log flush); after stop it is not called again and
// the hub holds nothing of it, its dispatcher ended.
func TestOnCommit(t *testing.T) {
	s := openTest(t)
	a, b := ensure(t, s, "wa", "p"), ensure(t, s, "wb", "p")
	put(t, s, b, "warm", "x") // open both files before listening
	put(t, s, a, "warm", "x")
	woken := make(chan struct{}, 100)
	stop := s.OnCommit([]string{"wa", "wa"}, func() { woken <- struct{}{} })
	if n, running := hubSize(); n != 1 || !running {
		t.Fatalf("hub after one listener of one workspace: %d entries, running %v", n, running)
	}
	quiet := func(what string) {
		t.Helper()
		waitFor(t, "the dispatcher to settle", hubSettled)
		if n := len(woken); n != 0 {
			t.Fatalf("%d wakes after %s", n, what)
		}
	}
	put(t, s, b, "other", "x")
	quiet("a commit of another workspace")
	if err := s.AppendSearchLog(context.Background(), []memory.SearchLogRow{{Project: a, Agent: "x", Query: "q", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	quiet("a search-log flush")
	put(t, s, a, "mine", "x")
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after a commit of wa")
	}
	quiet("one commit's wake")
	stop()
	stop() // twice is harmless
	put(t, s, a, "after", "x")
	waitFor(t, "the hub to empty and its dispatcher to end", func() bool {
		n, running := hubSize()
		return n == 0 && !running
	})
	if len(woken) != 0 {
		t.Error("woken after stop")
	}
}
