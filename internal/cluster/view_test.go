package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/cluster/etcdtest"
)

// TestViews: every node's Live and Owner views follow joins, campaigns, resignations and a node leaving.
func TestViews(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var ns []*Node
	var advs []string
	for i := 1; i <= 3; i++ {
		adv := fmt.Sprintf("http://127.0.0.1:900%d", i)
		ns = append(ns, joinT(t, testConfig(t, c.Endpoints(), adv, 2*time.Second)))
		advs = append(advs, adv)
	}
	ctx := ctxT(t)
	everyone := func(what string, cond func(n *Node) bool) {
		t.Helper()
		for i, n := range ns {
			if n != nil {
				waitFor(t, n, fmt.Sprintf("node %d: %s", i+1, what), func() bool { return cond(n) })
			}
		}
	}
	everyone("all three live", func(n *Node) bool { return slices.Equal(n.Live(), advs) })

	changed := ns[2].Changed()
	alpha, err := ns[0].Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(wait):
		t.Fatal("node 3's Changed did not fire on node 1's campaign")
	}
	beta, err := ns[1].Campaign(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	everyone("alpha on 1, beta on 2", func(n *Node) bool {
		a, ae, aok := n.Owner("alpha")
		b, be, bok := n.Owner("beta")
		all := n.Owners()
		return aok && bok && a == advs[0] && ae == alpha.Epoch() && b == advs[1] && be == beta.Epoch() &&
			len(all) == 2 && all["alpha"] == Owner{advs[0], alpha.Epoch()}
	})
	if err := alpha.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if alpha.Valid() || !closed(alpha.Lost()) {
		t.Fatal("resigned ownership still valid")
	}
	everyone("alpha unowned", func(n *Node) bool { _, _, ok := n.Owner("alpha"); return !ok })
	alpha3, err := ns[2].Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if alpha3.Epoch() <= alpha.Epoch() {
		t.Fatalf("epoch %d after %d", alpha3.Epoch(), alpha.Epoch())
	}
	everyone("alpha on 3", func(n *Node) bool {
		a, e, ok := n.Owner("alpha")
		return ok && a == advs[2] && e == alpha3.Epoch()
	})

	// Node 2 leaves: its lease is revoked at once, so its registration and beta go with it.
	if err := ns[1].Close(); err != nil {
		t.Fatal(err)
	}
	ns[1] = nil
	everyone("node 2 gone", func(n *Node) bool {
		_, _, ok := n.Owner("beta")
		return !ok && slices.Equal(n.Live(), []string{advs[0], advs[2]})
	})
}

// TestCloseRevokes: Close ends the node for good and revokes its lease in etcd right away.
func TestCloseRevokes(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	ctx := ctxT(t)
	o, err := n.Campaign(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if n.Valid() || o.Valid() || !closed(n.Done()) || !closed(o.Lost()) {
		t.Fatal("closed node or its ownership still valid")
	}
	ttl, err := c.Client(t).TimeToLive(ctx, n.LeaseID())
	if err != nil || ttl.TTL != -1 {
		t.Fatalf("lease after close: TTL %v, %v; want revoked (-1)", ttl.TTL, err)
	}
}

// TestCampaignExclusive: three nodes campaign for three workspaces from many goroutines at once (node 1
// with TryCampaign in a loop, the others with Campaign); each win
// increments a counter with an unfenced read and a fenced write, then resigns. If two owners ever
// overlapped, an increment would be lost or an in-process holder count would exceed one.
func TestCampaignExclusive(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var ns []*Node
	for i := 1; i <= 3; i++ {
		ns = append(ns, joinT(t, testConfig(t, c.Endpoints(), fmt.Sprintf("http://127.0.0.1:900%d", i), 2*time.Second)))
	}
	ctx := ctxT(t)
	wss := []string{"ws-a", "ws-b", "ws-c"}
	const rounds = 4
	var holders [3]atomic.Int32
	var mu sync.Mutex
	epochs := map[string][]int64{}
	var wg sync.WaitGroup
	errc := make(chan error, len(ns)*len(wss)*rounds)
	for ni, n := range ns {
		for wi, ws := range wss {
			wg.Go(func() {
				for range rounds {
					if err := winOnce(ctx, n, ws, ni == 0, &holders[wi], &mu, epochs); err != nil {
						errc <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for _, ws := range wss {
		resp, err := ns[0].Client().Get(ctx, "/munin/test/"+ws)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != fmt.Sprint(len(ns)*rounds) {
			t.Errorf("%s counter = %v, %v; want %d", ws, resp, err, len(ns)*rounds)
		}
		if !slices.IsSorted(epochs[ws]) || len(slices.Compact(slices.Clone(epochs[ws]))) != len(ns)*rounds {
			t.Errorf("%s epochs in counter order not strictly increasing: %v", ws, epochs[ws])
		}
	}
}

func winOnce(ctx context.Context, n *Node, ws string, try bool, holders *atomic.Int32, mu *sync.Mutex, epochs map[string][]int64) error {
	var o *Ownership
	var err error
	if try {
		for o == nil {
			if o, err = n.TryCampaign(ctx, ws); err != nil && !errors.Is(err, ErrOwned) {
				return err
			}
			if o == nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
	} else if o, err = n.Campaign(ctx, ws); err != nil {
		return err
	}
	if h := holders.Add(1); h != 1 {
		return fmt.Errorf("%s: %d holders at once", ws, h)
	}
	key := "/munin/test/" + ws
	resp, err := n.Client().Get(ctx, key)
	if err != nil {
		return err
	}
	v := 0
	if len(resp.Kvs) == 1 {
		fmt.Sscan(string(resp.Kvs[0].Value), &v)
	}
	mu.Lock()
	epochs[ws] = append(epochs[ws], o.Epoch())
	mu.Unlock()
	if err := o.Txn(ctx, clientv3.OpPut(key, fmt.Sprint(v+1))); err != nil {
		return err
	}
	holders.Add(-1)
	if err := o.Resign(ctx); err != nil {
		return err
	}
	// A resigned owner's write is refused.
	if err := o.Txn(ctx, clientv3.OpPut(key, "stale")); err == nil {
		return fmt.Errorf("%s: write after resign accepted", ws)
	}
	return nil
}
