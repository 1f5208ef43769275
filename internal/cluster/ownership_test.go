package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/cluster/etcdtest"
)

// TestTakeover: node 1 owns a workspace and is partitioned from etcd. It stops counting itself valid
// before node 2's campaign wins with a larger epoch; afterwards node 1's fenced writes fail with
// ErrNotOwner — locally, and in etcd too when the partition heals and the local check is bypassed.
func TestTakeover(t *testing.T) {
	c := etcdtest.Start(t, 1)
	p := newProxy(t, c.Endpoint(0))
	n1 := joinT(t, testConfig(t, []string{p.Endpoint()}, "http://127.0.0.1:9001", time.Second))
	n2 := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9002", 2*time.Second))
	ctx := ctxT(t)

	o1, err := n1.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := n1.PreviousEpoch(ctx, "ws1"); err != nil || prev != 0 {
		t.Fatalf("previous epoch of a new workspace = %d, %v", prev, err)
	}
	if err := o1.RecordEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, n2, "node 2 sees node 1 own ws1", func() bool {
		adv, e, ok := n2.Owner("ws1")
		return ok && adv == n1.Advertise() && e == o1.Epoch()
	})

	type won struct {
		o   *Ownership
		err error
		at  time.Time
	}
	wonc := make(chan won, 1)
	go func() {
		o, err := n2.Campaign(ctx, "ws1")
		wonc <- won{o, err, time.Now()}
	}()
	// Node 2 is a waiting candidate now (its key is in the view), not an owner.
	waitFor(t, n2, "node 2 queued", func() bool { n2.mu.Lock(); defer n2.mu.Unlock(); return len(n2.owners["ws1"]) == 2 })
	p.Cut()
	w := <-wonc
	if w.err != nil {
		t.Fatal(w.err)
	}
	o2 := w.o
	if o2.Epoch() <= o1.Epoch() {
		t.Fatalf("new epoch %d not above old %d", o2.Epoch(), o1.Epoch())
	}
	// Order, not duration: node 1's validity ended before node 2 won.
	if n1.Valid() || o1.Valid() {
		t.Fatal("node 1 still valid after node 2 won")
	}
	if end := n1.ValidUntil(); !end.Before(w.at) {
		t.Fatalf("node 1 valid until %v, after node 2 won at %v", end, w.at)
	}
	select {
	case <-n1.Done():
	case <-time.After(wait):
		t.Fatal("node 1 Done not closed")
	}
	if !closed(o1.Lost()) {
		t.Fatal("node 1's ownership not lost")
	}
	if err := o1.Txn(ctx, clientv3.OpPut("/munin/ws/ws1/x", "stale")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("stale owner's fenced write: %v, want ErrNotOwner", err)
	}
	if !errors.Is(n1.Err(), ErrLeaseLost) {
		t.Fatalf("node 1 Err = %v", n1.Err())
	}
	if _, err := n1.Campaign(ctx, "ws2"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("campaign on a lost node: %v", err)
	}

	// Healed: node 1 reaches etcd again, and etcd itself refuses its write at the old epoch.
	p.Heal()
	_, err = o1.commitFenced(ctx, []clientv3.Op{clientv3.OpPut("/munin/ws/ws1/x", "stale")})
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("stale owner's write in etcd: %v, want ErrNotOwner", err)
	}
	if n1.Valid() {
		t.Fatal("node 1 came back to life")
	}
	if resp, err := n2.Client().Get(ctx, "/munin/ws/ws1/x"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("stale write landed: %v %v", resp, err)
	}

	if prev, err := n2.PreviousEpoch(ctx, "ws1"); err != nil || prev != o1.Epoch() {
		t.Fatalf("previous epoch = %d, %v; want %d", prev, err, o1.Epoch())
	}
	if err := o2.RecordEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	if prev, _ := n2.PreviousEpoch(ctx, "ws1"); prev != o2.Epoch() {
		t.Fatalf("recorded epoch = %d, want %d", prev, o2.Epoch())
	}
	waitFor(t, n2, "node 2's views show the takeover", func() bool {
		adv, e, ok := n2.Owner("ws1")
		return ok && adv == n2.Advertise() && e == o2.Epoch() && slices.Equal(n2.Live(), []string{n2.Advertise()})
	})
	// Node 1's watches resume after the partition: its routing view is right again (it owns nothing).
	waitFor(t, n1, "node 1's view shows the takeover", func() bool {
		adv, e, ok := n1.Owner("ws1")
		return ok && adv == n2.Advertise() && e == o2.Epoch()
	})
}

// TestTxnFencedInEtcd: an owner whose election key is deleted behind its back (an operator, a lease
// revoked by hand) is refused by etcd although its own lease is fine, and its ownership ends.
func TestTxnFencedInEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	ctx := ctxT(t)
	o, err := n.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Txn(ctx, clientv3.OpPut("/munin/ws/ws1/x", "1")); err != nil {
		t.Fatalf("owner's fenced write: %v", err)
	}
	if _, err := c.Client(t).Delete(ctx, o.Key()); err != nil {
		t.Fatal(err)
	}
	_, err = o.commitFenced(ctx, []clientv3.Op{clientv3.OpPut("/munin/ws/ws1/x", "2")})
	if !errors.Is(err, ErrNotOwner) || !n.Valid() {
		t.Fatalf("write after the key was deleted: %v (node valid %v)", err, n.Valid())
	}
	want := fmt.Sprintf("not owner at epoch %d", o.Epoch())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q lacks %q", err, want)
	}
	select {
	case <-o.Lost():
	case <-time.After(wait):
		t.Fatal("ownership not lost")
	}
	if o.Valid() {
		t.Fatal("ownership valid after its key vanished")
	}
	resp, err := n.Client().Get(ctx, "/munin/ws/ws1/x")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "1" {
		t.Fatalf("x = %v, %v; want the owner's 1 only", resp, err)
	}
}

// TestOwnershipLostByWatch: the delete of an owner's key reaches it through the owner watch even when it
// does not write: Lost closes.
func TestOwnershipLostByWatch(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	ctx := ctxT(t)
	o, err := n.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := n.Campaign(ctx, "ws1"); err != nil || again != o {
		t.Fatalf("second campaign for a held workspace = %p, %v; want the same ownership %p", again, err, o)
	}
	if _, err := c.Client(t).Delete(ctx, o.Key()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.Lost():
	case <-time.After(wait):
		t.Fatal("ownership not lost after its key was deleted")
	}
	o2, err := n.Campaign(ctx, "ws1")
	if err != nil || o2 == o || o2.Epoch() <= o.Epoch() || !o2.Valid() {
		t.Fatalf("campaign again = %v (epoch %d vs %d), %v", o2, o2.Epoch(), o.Epoch(), err)
	}
}

// TestCampaignRejectsBadWorkspace: names are checked like the store checks them (they become keys).
func TestCampaignRejectsBadWorkspace(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	for _, ws := range []string{"", "a/b", "../x", "UPPER"} {
		if _, err := n.Campaign(ctxT(t), ws); err == nil || !strings.Contains(err.Error(), "workspace name") {
			t.Errorf("campaign %q: %v", ws, err)
		}
	}
}

// TestCampaignAfterFailedResign: a Resign that fails leaves the election key (it is per lease) in etcd;
// the node's next campaign for the workspace must still start a new term with a larger epoch.
func TestCampaignAfterFailedResign(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	o, err := n.Campaign(ctxT(t), "ws1")
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Resign(gone); err == nil {
		t.Fatal("resign with a cancelled context succeeded")
	}
	if o.Valid() {
		t.Fatal("ownership valid after resigning")
	}
	o2, err := n.Campaign(ctxT(t), "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if o2.Epoch() <= o.Epoch() {
		t.Fatalf("new term at epoch %d, the ended one was %d", o2.Epoch(), o.Epoch())
	}
	if err := o.Txn(ctxT(t), clientv3.OpPut("/munin/x", "stale")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("ended term's write: %v", err)
	}
	if err := o2.Txn(ctxT(t), clientv3.OpPut("/munin/x", "new")); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseLivesOnlyByOwnLoop pins the workaround in Join: the concurrency.Session that carries the lease
// into elections must not keep it alive on its own. With the node's keepalive loop stopped (and nothing
// revoked), etcd must expire the lease.
func TestLeaseLivesOnlyByOwnLoop(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", time.Second))
	if _, err := n.Campaign(ctxT(t), "ws1"); err != nil {
		t.Fatal(err)
	}
	n.lifeCancel() // stops keepAliveLoop without marking the node lost or revoking
	cli := c.Client(t)
	deadline := time.Now().Add(wait)
	for {
		ttl, err := cli.TimeToLive(ctxT(t), n.LeaseID())
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TTL == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease still alive (TTL %d s) %v after the node stopped renewing it", ttl.TTL, wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n.Valid() {
		t.Fatal("node valid although etcd expired its lease")
	}
}

// TestTryCampaign: a free workspace is taken at once; one that is owned is refused at once, naming the
// owner, and leaves no candidacy behind (so the owner's death does not hand it to this node).
func TestTryCampaign(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n1 := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	n2 := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9002", 2*time.Second))
	ctx := ctxT(t)
	o1, err := n1.TryCampaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := n1.TryCampaign(ctx, "ws1"); err != nil || again != o1 {
		t.Fatalf("try again on the owner = %v, %v", again, err)
	}
	_, err = n2.TryCampaign(ctx, "ws1")
	if !errors.Is(err, ErrOwned) || !strings.Contains(err.Error(), fmt.Sprintf("http://127.0.0.1:9001 at epoch %d", o1.Epoch())) {
		t.Fatalf("try on an owned workspace: %v", err)
	}
	resp, err := c.Client(t).Get(ctx, "/munin/owner/ws1/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("candidates after a refused try: %v, %v; want only the owner", resp.Kvs, err)
	}
	if err := o1.Txn(ctx, clientv3.OpPut("/munin/x", "1")); err != nil {
		t.Fatal(err)
	}
	if err := o1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	o2, err := n2.TryCampaign(ctx, "ws1")
	if err != nil || o2.Epoch() <= o1.Epoch() {
		t.Fatalf("try after resign = %v, %v", o2, err)
	}
	if err := o1.Txn(ctx, clientv3.OpPut("/munin/x", "stale")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("old owner's write: %v", err)
	}
	// Resign can fail and leave the key: a later try still starts a new term.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = o2.Resign(gone)
	o3, err := n2.TryCampaign(ctx, "ws1")
	if err != nil || o3.Epoch() <= o2.Epoch() {
		t.Fatalf("try after a failed resign = %v, %v", o3, err)
	}
	waitFor(t, n1, "node 1 sees node 2 own ws1", func() bool {
		adv, e, ok := n1.Owner("ws1")
		return ok && adv == n2.Advertise() && e == o3.Epoch()
	})
}

// TestEtcdLost: when etcd goes away, an owner stops counting itself valid within its lease TTL and
// refuses fenced writes; when etcd comes back the node stays lost (final), and a new Join with the same
// advertise URL gets a new lease and a new epoch.
func TestEtcdLost(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cfg := testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", time.Second)
	n := joinT(t, cfg)
	ctx := ctxT(t)
	o, err := n.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	select {
	case <-n.Done():
	case <-time.After(wait):
		t.Fatal("node still valid with etcd gone")
	}
	if n.Valid() || o.Valid() || !closed(o.Lost()) {
		t.Fatal("node or ownership valid with etcd gone")
	}
	if err := o.Txn(ctx, clientv3.OpPut("/munin/x", "1")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("fenced write with etcd gone: %v", err)
	}
	// Closing the lost node ends its streams to the stopped member, which lets that member's close (and
	// so the restart) finish without waiting for etcd's request timeout.
	_ = n.Close()
	c.Restart(0)
	n2 := joinT(t, cfg)
	o2, err := n2.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if o2.Epoch() <= o.Epoch() || n.Valid() || n2.LeaseID() == n.LeaseID() {
		t.Fatalf("after etcd restart: epoch %d (old %d), old node valid %v", o2.Epoch(), o.Epoch(), n.Valid())
	}
}

// TestLateRenewalDoesNotRevive: the owner's traffic to etcd hangs (as for a paused process or a stalled
// network) until its validity runs out; when the held keepalives are then delivered, and etcd may even
// renew the lease, the node stays lost, and its lease is revoked so that others need not wait for it.
func TestLateRenewalDoesNotRevive(t *testing.T) {
	c := etcdtest.Start(t, 1)
	p := newProxy(t, c.Endpoint(0))
	n := joinT(t, testConfig(t, []string{p.Endpoint()}, "http://127.0.0.1:9001", time.Second))
	ctx := ctxT(t)
	o, err := n.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	p.Pause()
	select {
	case <-n.Done():
	case <-time.After(wait):
		t.Fatal("node still valid with its keepalives held")
	}
	p.Resume()
	cli := c.Client(t)
	deadline := time.Now().Add(wait)
	for {
		ttl, err := cli.TimeToLive(ctx, n.LeaseID())
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TTL == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease of the lost node still alive (TTL %d s)", ttl.TTL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n.Valid() || o.Valid() || !errors.Is(n.Err(), ErrLeaseLost) {
		t.Fatal("node came back after late renewals")
	}
	if err := o.Txn(ctx, clientv3.OpPut("/munin/x", "late")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("write after late renewals: %v", err)
	}
	o2, err := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9002", 2*time.Second)).Campaign(ctx, "ws1")
	if err != nil || o2.Epoch() <= o.Epoch() {
		t.Fatalf("successor: %v, %v", o2, err)
	}
}
