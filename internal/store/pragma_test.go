package store

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"munin/internal/memory"
)

// writerSynchronous reads PRAGMA synchronous over a writer connection, the
// one whose setting decides when a commit is durable (0 OFF, 1 NORMAL,
// 2 FULL). Reader connections have their own value and would prove nothing.
func writerSynchronous(t *testing.T, w *sql.DB) int {
	t.Helper()
	var n int
	if err := w.QueryRow("PRAGMA synchronous").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The writer connections of the control database and of every workspace
// really run with the configured synchronous mode: FULL (2) by default, so
// that an acknowledged write survives a power loss, NORMAL (1) only when
// asked for.
func TestWriterSynchronous(t *testing.T) {
	for _, c := range []struct {
		opt  string
		want int
	}{{"", 2}, {"full", 2}, {"NORMAL", 1}, {"normal", 1}} {
		t.Run("synchronous="+c.opt, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{Synchronous: c.opt})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			ensure(t, s, "team", "alpha")
			ws, err := s.workspace(context.Background(), "team", false)
			if err != nil {
				t.Fatal(err)
			}
			if got := writerSynchronous(t, s.control.writer); got != c.want {
				t.Errorf("control writer: PRAGMA synchronous = %d, want %d", got, c.want)
			}
			if got := writerSynchronous(t, ws.pool.writer); got != c.want {
				t.Errorf("workspace writer: PRAGMA synchronous = %d, want %d", got, c.want)
			}
		})
	}
}

// A test that stops while the writer sits in the gate does not leave it
// there: the gate's cleanup opens it, so a failing assertion ends the test
// instead of hanging the store's Close until the binary's timeout.
func TestGateOpensOnCleanup(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	held := make(chan error, 1)
	var g *gate
	t.Run("holds the writer and ends", func(t *testing.T) {
		g = installGate(t, s)
		g.arm()
		go func() {
			_, err := s.Append(context.Background(), ref, memory.Write{Slug: "held", Agent: "a"})
			held <- err
		}()
		g.waitEntered(t)
		// Ends without opening the gate, as a failing assertion would.
	})
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("held write: %v", err)
		}
	case <-time.After(10 * time.Second):
		g.open() // so that this failure does not hang in the store's Close
		t.Fatal("the writer is still held after the subtest ended: the gate was not opened")
	}
}
