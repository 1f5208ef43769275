package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"munin/internal/memory"
)

// ErrOwned is returned by TryCampaign when another node owns the workspace.
var ErrOwned = errors.New("owned by another node")

// Campaign makes this node a candidate for the workspace and blocks until it owns it, ctx ends, or the
// node's lease is lost. The election value is this node's advertise URL, so every node's Owner view
// routes to it. Campaigning again for a workspace the node holds returns the same Ownership.
//
// A waiting candidate is next in line when the owner dies, whatever the placement says; a node that
// only wants a free workspace uses TryCampaign.
func (n *Node) Campaign(ctx context.Context, workspace string) (*Ownership, error) {
	return n.campaignWith(ctx, workspace, true)
}

// TryCampaign takes the workspace only if no node owns it (nor waits for it) right now; otherwise it
// returns at once with an error wrapping ErrOwned that names the owner, and leaves no candidacy behind.
func (n *Node) TryCampaign(ctx context.Context, workspace string) (*Ownership, error) {
	return n.campaignWith(ctx, workspace, false)
}

func (n *Node) campaignWith(ctx context.Context, workspace string, wait bool) (*Ownership, error) {
	if err := memory.ValidateName("workspace", workspace); err != nil {
		return nil, err
	}
	n.mu.Lock()
	if !n.validLocked(time.Now()) {
		err := fmt.Errorf("%w: %s", ErrLeaseLost, n.lostReason)
		n.mu.Unlock()
		return nil, err
	}
	if o := n.owned[workspace]; o != nil {
		n.mu.Unlock()
		return o, nil
	}
	if n.campaign[workspace] {
		n.mu.Unlock()
		return nil, fmt.Errorf("cluster: a campaign for workspace %s is already running on this node", workspace)
	}
	n.campaign[workspace] = true
	ended := n.ended[workspace]
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.campaign, workspace)
		n.mu.Unlock()
	}()

	// The campaign ends with the node's life: a node that lost its lease must not win anything.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(n.life, cancel)
	defer stop()
	fail := func(err error) (*Ownership, error) {
		if n.life.Err() != nil {
			err = n.Err()
		}
		return nil, fmt.Errorf("cluster: campaign for workspace %s: %w", workspace, err)
	}
	var e *concurrency.Election
	for attempt := 0; ; attempt++ {
		var err error
		if wait {
			e = concurrency.NewElection(n.sess, ownerPrefix(n.cfg.Prefix)+workspace)
			err = e.Campaign(cctx, n.cfg.Advertise)
		} else {
			e, err = n.tryElect(cctx, workspace)
		}
		if err != nil {
			return fail(err)
		}
		if e.Rev() > ended {
			break
		}
		// The election key is per lease, so a key left over from an ended term of this node (its Resign
		// failed) is found again with its old epoch. Delete it and stand again: every term a new epoch.
		key, rev := e.Key(), e.Rev()
		if attempt > 0 {
			return fail(fmt.Errorf("won the ended epoch %d again (key %s)", rev, key))
		}
		if err := e.Resign(cctx); err != nil {
			return fail(fmt.Errorf("delete stale election key %s (epoch %d): %w", key, rev, err))
		}
	}
	o := &Ownership{n: n, ws: workspace, elect: e, key: e.Key(), epoch: e.Rev(), lost: make(chan struct{})}
	n.mu.Lock()
	if !n.validLocked(time.Now()) {
		n.mu.Unlock()
		return fail(ErrLeaseLost)
	}
	n.owned[workspace] = o
	n.mu.Unlock()
	// Campaign returns once every older candidate is gone, even if our own key expired meanwhile; so
	// check that the key is still ours. Registered first, so the watch cannot miss a later delete.
	gctx, gcancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
	resp, err := n.cli.Get(gctx, o.key)
	gcancel()
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != o.epoch {
		n.drop(o)
		if err == nil {
			err = fmt.Errorf("%w: election key %s vanished while campaigning", ErrNotOwner, o.key)
		}
		return fail(err)
	}
	n.log.Info("owner of workspace", "workspace", workspace, "epoch", o.epoch)
	return o, nil
}

// tryElect puts this node's election key (the key concurrency.Election would use) and reads the leader
// in one transaction. If the key leads, the election is resumed from it; if not, the key is removed
// again (fenced by its create revision) and the owner is reported.
func (n *Node) tryElect(ctx context.Context, workspace string) (*concurrency.Election, error) {
	pfx := ownerPrefix(n.cfg.Prefix) + workspace + "/"
	key := fmt.Sprintf("%s%x", pfx, n.lease)
	first := clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, n.cfg.Advertise, clientv3.WithLease(n.lease)), first).
		Else(clientv3.OpGet(key), first).Commit()
	if err != nil {
		return nil, err
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) != 1 {
			return nil, fmt.Errorf("election key %s vanished", key)
		}
		rev = kvs[0].CreateRevision
	}
	lead := resp.Responses[1].GetResponseRange().Kvs
	if len(lead) == 1 && string(lead[0].Key) == key {
		return concurrency.ResumeElection(n.sess, pfx, key, rev), nil
	}
	if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).Commit(); err != nil {
		return nil, fmt.Errorf("withdraw election key %s: %w", key, err)
	}
	if len(lead) != 1 {
		return nil, fmt.Errorf("election of %s has no leader although key %s was put", workspace, key)
	}
	return nil, fmt.Errorf("%w: %s at epoch %d", ErrOwned, lead[0].Value, lead[0].CreateRevision)
}
