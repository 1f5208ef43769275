package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"munin/internal/memory"
)

// ErrNotOwner is returned by a fenced write of a node that is not (or no longer) the owner of the
// workspace at the epoch it claims. Nothing was written.
var ErrNotOwner = errors.New("not owner")

// Ownership is this node's hold on one workspace: it won the workspace's election at Epoch and keeps it
// until it resigns, its election key disappears, or the node's lease is lost. Only the owner may write
// the workspace; every etcd write it makes about the workspace goes through Txn, which etcd refuses
// once a newer owner exists.
type Ownership struct {
	n     *Node
	ws    string
	elect *concurrency.Election
	key   string // the election key; its create revision is the epoch
	epoch int64

	lostOnce sync.Once
	lost     chan struct{}
	resignMu sync.Mutex // concurrency.Election is not safe for concurrent use
}

func epochKey(prefix, ws string) string { return prefix + "/ws/" + ws + "/epoch" }

// drop ends an ownership locally.
func (n *Node) drop(o *Ownership) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endLocked(o)
}

// endLocked ends an ownership: Lost closes, and the epoch is remembered so that this node never starts
// a new term at an epoch it already held.
func (n *Node) endLocked(o *Ownership) {
	if n.owned[o.ws] == o {
		delete(n.owned, o.ws)
	}
	n.ended[o.ws] = max(n.ended[o.ws], o.epoch)
	o.markLost()
}

// Workspace returns the workspace this ownership is for.
func (o *Ownership) Workspace() string { return o.ws }

// Epoch returns the workspace's epoch under this owner: the create revision of its election key. Epochs
// of successive owners of a workspace strictly increase.
func (o *Ownership) Epoch() int64 { return o.epoch }

// Key returns the election key whose create revision fences the owner's writes.
func (o *Ownership) Key() string { return o.key }

// Lost is closed when the ownership ends: resigned, election key gone, or the node's lease lost.
func (o *Ownership) Lost() <-chan struct{} { return o.lost }

// Valid reports whether this node still owns the workspace: the node's lease is valid and the ownership
// has not ended. An owner checks it after a write is durable and before acknowledging it.
func (o *Ownership) Valid() bool {
	select {
	case <-o.lost:
		return false
	default:
	}
	return o.n.Valid()
}

func (o *Ownership) markLost() { o.lostOnce.Do(func() { close(o.lost) }) }

// Resign gives the workspace up: the election key is deleted (if it is still ours), so the next
// candidate wins at once.
func (o *Ownership) Resign(ctx context.Context) error {
	o.n.drop(o)
	o.resignMu.Lock()
	defer o.resignMu.Unlock()
	if err := o.elect.Resign(ctx); err != nil {
		return fmt.Errorf("cluster: resign workspace %s: %w", o.ws, err)
	}
	o.n.log.Info("resigned workspace", "workspace", o.ws, "epoch", o.epoch)
	return nil
}

// Txn commits ops in one etcd transaction only if this ownership still holds at its epoch: locally (node
// lease valid, not lost) and in etcd (the election key's create revision equals the epoch). Otherwise it
// writes nothing and returns an error wrapping ErrNotOwner.
func (o *Ownership) Txn(ctx context.Context, ops ...clientv3.Op) error {
	_, err := o.TxnResponse(ctx, ops...)
	return err
}

// TxnResponse is Txn that also returns etcd's answer, for ops that read.
func (o *Ownership) TxnResponse(ctx context.Context, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	if !o.Valid() {
		return nil, o.notOwner("this node's hold has ended")
	}
	return o.commitFenced(ctx, ops)
}

// commitFenced is the etcd half of the fence, which holds even when the local half is wrong (a paused
// node that has not noticed yet).
func (o *Ownership) commitFenced(ctx context.Context, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	resp, err := o.n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(o.key), "=", o.epoch)).
		Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: fenced write for workspace %s at epoch %d: %w", o.ws, o.epoch, err)
	}
	if !resp.Succeeded {
		o.n.drop(o)
		return nil, o.notOwner("its election key is gone in etcd")
	}
	return resp, nil
}

func (o *Ownership) notOwner(why string) error {
	return fmt.Errorf("cluster: workspace %s: %w at epoch %d (%s)", o.ws, ErrNotOwner, o.epoch, why)
}

// RecordEpoch stores this ownership's epoch as the workspace's last opened epoch (fenced). The owner calls
// it once it has opened the workspace for writing, so that the next owner knows where to restore from.
func (o *Ownership) RecordEpoch(ctx context.Context) error {
	return o.Txn(ctx, clientv3.OpPut(epochKey(o.n.cfg.Prefix, o.ws), strconv.FormatInt(o.epoch, 10)))
}

// PreviousEpoch returns the epoch recorded by the last owner that opened the workspace for writing
// (RecordEpoch), or 0 if none ever did.
func (n *Node) PreviousEpoch(ctx context.Context, workspace string) (int64, error) {
	if err := memory.ValidateName("workspace", workspace); err != nil {
		return 0, err
	}
	key := epochKey(n.cfg.Prefix, workspace)
	resp, err := n.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("cluster: read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	e, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil || e <= 0 {
		return 0, fmt.Errorf("cluster: %s holds %q, not an epoch", key, resp.Kvs[0].Value)
	}
	return e, nil
}

// Ownership returns this node's current hold on the workspace, or nil if it holds none.
func (n *Node) Ownership(workspace string) *Ownership {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.owned[workspace]
}
