package owner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"munin/internal/memory"
)

// A takeover at a recorded epoch whose replica location holds nothing (the
// replica was emptied, or the wrong location is configured) must not start
// the workspace empty: the last owner recorded the epoch only after its
// first complete sync, so an empty replica there means acknowledged writes
// are missing. The new owner's first write answers unavailable naming the
// empty replica, commits nothing, starts no replication into its own epoch
// and leaves the recorded epoch where it was, so that a later takeover (once
// the replica is back) still restores it — and one does.
func TestTakeoverRefusesAnEmptyReplicaAtARecordedEpoch(t *testing.T) {
	const recorded = 3
	c := newFakeCluster("http://b", "http://b")
	c.recorded["team"] = recorded
	n := newNode(t, c, Options{})
	// Nothing at the replica's location for epoch 3: n.r.dir is a fresh
	// directory.
	routeSelf(t, n)

	err := write(n, "first")
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("first write after taking over from an empty replica: %v, want unavailable", err)
	}
	msg := memory.PublicMessage(err) // what the client sees
	for _, want := range []string{"team", "empty", fmt.Sprint("epoch ", recorded)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	n.r.mu.Lock()
	restored := append([]string(nil), n.r.restored...)
	url, replicating := n.r.registered[filepath.Join(n.m.opts.DataDir, "team.db")]
	n.r.mu.Unlock()
	if len(restored) == 0 || restored[0] != n.r.EpochURL("team", recorded) {
		t.Errorf("restored from %v, want the recorded epoch's %s", restored, n.r.EpochURL("team", recorded))
	}
	if replicating {
		t.Errorf("an empty workspace replicates into %s", url)
	}
	c.mu.Lock()
	got := c.recorded["team"]
	c.mu.Unlock()
	if got != recorded {
		t.Errorf("recorded epoch %d, want still %d", got, recorded)
	}
	if _, open := n.st.Stats().Workspaces["team"]; open {
		t.Error("the workspace stayed open on an empty file")
	}
	// Nothing was acknowledged: a retry is refused the same way, and no
	// read finds the write.
	if err := write(n, "second"); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("second write: %v, want unavailable", err)
	}
	if _, _, err := n.st.Get(context.Background(), ref, "first", 0); err == nil {
		t.Error("the refused write can be read")
	}

	// Once the replica is back, the next call takes the workspace over
	// with everything the last owner acknowledged.
	prev, _ := previousOwner(t, "acknowledged")
	n.r.dir = prev.r.dir
	if err := write(n, "after"); err != nil {
		t.Fatalf("write once the replica is back: %v", err)
	}
	if v, _, err := n.st.Get(context.Background(), ref, "acknowledged", 0); err != nil || v.Content != "c acknowledged" {
		t.Fatalf("the last owner's write after the replica came back: %+v %v", v, err)
	}
}
