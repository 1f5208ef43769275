package owner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/remote"
)

var ref = memory.ProjectRef{Workspace: "team", Project: "p"}

func write(n *node, slug string) error {
	_, err := n.st.Append(context.Background(), ref, memory.Write{Slug: slug, Title: "t", Content: "c " + slug, Agent: "a"})
	return err
}

// routeSelf makes this node the workspace's owner through Route.
func routeSelf(t *testing.T, n *node) remote.Target {
	t.Helper()
	tg, err := n.m.Route(context.Background(), ref.Workspace)
	if err != nil || !tg.Self {
		t.Fatalf("Route of an unowned workspace on the preferred node: %+v %v", tg, err)
	}
	return tg
}

// Sync mode: a write is acknowledged only after a sync, once per batch;
// a failing sync or an ownership that became invalid answers unavailable;
// an invalid ownership commits nothing; a lost one closes the workspace
// and refuses forwarded calls.
func TestWritesAreGatedOnReplicaAndOwnership(t *testing.T) {
	c := newFakeCluster("http://a", "http://a", "http://b")
	n := newNode(t, c, Options{})
	tg := routeSelf(t, n)
	if err := n.m.Owns(context.Background(), "team", tg.Epoch); err != nil {
		t.Fatalf("Owns at its own epoch: %v", err)
	}
	if err := n.m.Owns(context.Background(), "team", tg.Epoch-1); err == nil {
		t.Fatal("Owns accepted a call routed by an older epoch")
	}

	syncs := n.r.syncs.Load()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if err := write(n, fmt.Sprint("s", i)); err != nil {
				t.Errorf("write: %v", err)
			}
		})
	}
	wg.Wait()
	// One sync per batch, plus the takeover's first full copy (the
	// workspace opens with the first write).
	if got, batches := n.r.syncs.Load()-syncs, n.st.Stats().Batches; got != batches+1 {
		t.Errorf("%d syncs for %d batches, want one each and one at the takeover", got, batches)
	}
	if c.recorded["team"] != tg.Epoch {
		t.Errorf("recorded epoch %d, want %d (after the first sync)", c.recorded["team"], tg.Epoch)
	}

	n.r.failSync.Store(true)
	if err := write(n, "unsynced"); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("write with the replica down: %v, want unavailable", err)
	}
	n.r.failSync.Store(false)

	claim := c.claim("team")
	claim.valid.Store(false) // the lease ran out; the loss is not yet final
	if err := write(n, "stale"); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("write after the lease ran out: %v, want unavailable", err)
	}
	claim.valid.Store(true)
	if _, _, err := n.st.Get(context.Background(), ref, "stale", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("a node whose lease ran out committed a write: %v", err)
	}

	claim.lose()
	deadline := time.Now().Add(10 * time.Second)
	for len(n.st.Stats().Workspaces) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(n.st.Stats().Workspaces) != 0 {
		t.Fatal("the lost workspace stayed open")
	}
	if err := n.m.Owns(context.Background(), "team", tg.Epoch); err == nil {
		t.Fatal("Owns accepted a call for a lost workspace")
	}
}

// Route sends calls to the owner another node is; with no owner, the
// preferred node campaigns at once and the next one only after its
// pause, and not at all if the preferred node took it meanwhile.
func TestRouteAndCampaignByRank(t *testing.T) {
	c := newFakeCluster("http://b", "http://a", "http://b")
	n := newNode(t, c, Options{RankStep: time.Hour, RouteWait: 300 * time.Millisecond})
	c.setOwner("team", "http://a")
	tg, err := n.m.Route(context.Background(), "team")
	if err != nil || tg.Self || tg.URL != "http://a" {
		t.Fatalf("Route to the owner elsewhere: %+v %v", tg, err)
	}
	// No owner, and this node ranks second (a pause of an hour): Route
	// gives up after RouteWait without having campaigned.
	_, err = n.m.Route(context.Background(), "other")
	if memory.ErrorCode(err) != memory.CodeUnavailable || c.campaign.Load() != 0 {
		t.Fatalf("Route with the preferred node silent: %v, %d campaigns; want unavailable and none", err, c.campaign.Load())
	}

	c2 := newFakeCluster("http://b", "http://a", "http://b")
	n2 := newNode(t, c2, Options{RankStep: 50 * time.Millisecond})
	tg, err = n2.m.Route(context.Background(), "team")
	if err != nil || !tg.Self || c2.campaign.Load() != 1 {
		t.Fatalf("the second node after its pause: %+v %v, %d campaigns", tg, err, c2.campaign.Load())
	}
	if _, err := n2.m.Route(context.Background(), "../x"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Fatalf("Route of a bad name: %v", err)
	}

	// Cut off from etcd, a node answers unavailable at once (the route
	// wait of an hour would otherwise run out first).
	c3 := newFakeCluster("http://a", "http://a")
	n3 := newNode(t, c3, Options{RouteWait: time.Hour})
	c3.cut.Store(true)
	if _, err := n3.m.Route(context.Background(), "team"); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("Route on a node cut off from etcd: %v, want unavailable", err)
	}
}

// A takeover restores the epoch the last owner recorded (not a newer one
// that never recorded), replaces a stale local file, checks integrity,
// replicates into its own epoch and records it; a restore that is not a
// database fails the open with unavailable.
func TestTakeoverRestoresTheRecordedEpoch(t *testing.T) {
	// A previous owner wrote two entries; its file is the replica of epoch 3.
	prev, replica := previousOwner(t, "one", "two")

	// The new owner: epoch 3 recorded; a stale local file is in its way.
	c2 := newFakeCluster("http://b", "http://b")
	c2.recorded["team"] = 3
	n := newNode(t, c2, Options{})
	n.r.dir = prev.r.dir
	if err := os.WriteFile(filepath.Join(n.m.opts.DataDir, "team.db"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := routeSelf(t, n)
	if v, latest, err := n.st.Get(context.Background(), ref, "two", 0); err != nil || latest != 1 || v.Content != "c two" {
		t.Fatalf("after takeover: %+v %d %v", v, latest, err)
	}
	if len(n.r.restored) != 1 || n.r.restored[0] != replica {
		t.Errorf("restored from %v, want [%s]", n.r.restored, replica)
	}
	if got := n.r.registered[filepath.Join(n.m.opts.DataDir, "team.db")]; got != n.r.EpochURL("team", tg.Epoch) {
		t.Errorf("replicating to %q, want this epoch's %q", got, n.r.EpochURL("team", tg.Epoch))
	}
	if c2.recorded["team"] != tg.Epoch {
		t.Errorf("recorded epoch %d, want %d", c2.recorded["team"], tg.Epoch)
	}

	// A corrupt replica: the open fails, nothing is served from it.
	c3 := newFakeCluster("http://c", "http://c")
	c3.recorded["team"] = 4
	bad := newNode(t, c3, Options{})
	if err := os.MkdirAll(bad.r.EpochURL("team", 4), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad.r.EpochURL("team", 4), "db"), []byte("not a database, not at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	routeSelf(t, bad)
	if _, _, err := bad.st.Get(context.Background(), ref, "two", 0); err == nil {
		t.Fatal("a corrupt replica was opened")
	}
}

// Async mode acknowledges before the replica holds the write, and refuses
// writes once the replica is further behind than LagMax.
func TestAsyncRefusesPastTheLagBound(t *testing.T) {
	c := newFakeCluster("http://a", "http://a")
	n := newNode(t, c, Options{Async: true, SyncEvery: 10 * time.Millisecond, LagMax: 100 * time.Millisecond})
	routeSelf(t, n)
	if err := write(n, "first"); err != nil {
		t.Fatal(err)
	}
	n.r.failSync.Store(true)
	if err := write(n, "unreplicated"); err != nil {
		t.Fatalf("async write with the replica down but within the bound: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = write(n, "more"); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("writes past the lag bound: %v, want unavailable", err)
	}
	if n.m.Lag() <= 100*time.Millisecond {
		t.Errorf("Lag() = %s, want past the bound", n.m.Lag())
	}
	n.r.failSync.Store(false)
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err = write(n, "again"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("writes once the replica caught up: %v", err)
	}
}

// Follow takes a workspace nobody owns without waiting for a request, and
// again after its owner let go.
func TestFollowTakesUnownedWorkspaces(t *testing.T) {
	c := newFakeCluster("http://a", "http://a")
	n := newNode(t, c, Options{})
	changed := make(chan struct{})
	n.m.Follow(func() <-chan struct{} { return changed }, func() []string { return []string{"team", "other"} })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if n.m.owned("team") != nil && n.m.owned("other") != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n.m.owned("team") == nil || n.m.owned("other") == nil {
		t.Fatal("Follow did not take the unowned workspaces")
	}
}

// previousOwner is a node that owned workspace team and wrote slugs, then
// closed it; its file is the replica of epoch 3 (returned).
func previousOwner(t *testing.T, slugs ...string) (*node, string) {
	prev := newNode(t, newFakeCluster("http://a", "http://a"), Options{})
	routeSelf(t, prev)
	for _, s := range slugs {
		if err := write(prev, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := prev.st.CloseWorkspace("team"); err != nil {
		t.Fatal(err)
	}
	replica := prev.r.EpochURL("team", 3)
	copyFile(t, filepath.Join(prev.m.opts.DataDir, "team.db"), filepath.Join(replica, "db"))
	return prev, replica
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
