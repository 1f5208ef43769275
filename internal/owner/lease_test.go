package owner

import (
	"context"
	"testing"

	"munin/internal/memory"
)

// Sync mode: a lease that runs out while the batch waits for the replica
// leaves the batch unacknowledged. BeforeCommit saw a valid claim and the
// replica confirmed the batch, so only AfterCommit's second look at the
// claim, after the sync, can refuse it: a successor may already have
// restored the replica without this batch.
func TestLeaseLostDuringSyncIsNotAcknowledged(t *testing.T) {
	c := newFakeCluster("http://a", "http://a")
	n := newNode(t, c, Options{})
	routeSelf(t, n)
	if err := write(n, "before"); err != nil { // opens the workspace (takeover sync)
		t.Fatal(err)
	}
	claim := c.claim(ref.Workspace)
	lapse := func() { claim.valid.Store(false) }
	n.r.during.Store(&lapse)
	syncs := n.r.syncs.Load()
	err := write(n, "during")
	n.r.during.Store(nil)
	if n.r.syncs.Load() == syncs {
		t.Fatal("the write did not wait for the replica")
	}
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("write whose lease ran out during the replica sync: %v, want unavailable (not acknowledged)", err)
	}
	// Committed locally, though: the write is unacknowledged, not undone.
	claim.valid.Store(true)
	if _, _, err := n.st.Get(context.Background(), ref, "during", 0); err != nil {
		t.Fatalf("the unacknowledged write is not in the local file: %v", err)
	}
}
