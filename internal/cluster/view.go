package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// candidate is one key under <prefix>/owner/<workspace>/: the current owner (lowest create revision) or a
// node waiting in its campaign.
type candidate struct {
	rev       int64  // create revision = the epoch if this candidate leads
	advertise string // the campaigning node's advertise URL
}

// Owner is a workspace's current owner as this node's view has it.
type Owner struct {
	Advertise string // the owner's advertise URL
	Epoch     int64  // its election key's create revision
}

func ownerPrefix(prefix string) string { return prefix + "/owner/" }
func nodesPrefix(prefix string) string { return prefix + "/nodes/" }

// startViews loads both views with one read each, so that Join returns with them filled, and then follows
// them with watches that start right after that read.
func (n *Node) startViews(ctx, watchCtx context.Context) error {
	for _, pfx := range []string{nodesPrefix(n.cfg.Prefix), ownerPrefix(n.cfg.Prefix)} {
		cctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
		resp, err := n.cli.Get(cctx, pfx, clientv3.WithPrefix())
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: read %s: %w", pfx, err)
		}
		n.reset(pfx, resp)
		n.wg.Add(1)
		go n.follow(watchCtx, pfx, resp.Header.Revision)
	}
	return nil
}

// follow keeps one view current: watch from rev+1; when the watch fails (compaction, lost leader, etcd
// restart), read the prefix again and watch from there. It ends when ctx is cancelled (Close).
func (n *Node) follow(ctx context.Context, pfx string, rev int64) {
	defer n.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range n.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if wr.Err() != nil {
				n.log.Warn("watch ended; reading again", "prefix", pfx, "err", wr.Err())
				break
			}
			if len(wr.Events) > 0 {
				n.apply(pfx, wr.Events)
				rev = wr.Header.Revision
				backoff = 50 * time.Millisecond
			}
		}
		cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			gctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
			resp, err := n.cli.Get(gctx, pfx, clientv3.WithPrefix())
			cancel()
			if err == nil {
				n.reset(pfx, resp)
				rev = resp.Header.Revision
				break
			}
		}
	}
}

// reset replaces a view with a full read of its prefix.
func (n *Node) reset(pfx string, resp *clientv3.GetResponse) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if pfx == nodesPrefix(n.cfg.Prefix) {
		n.nodes = map[string]string{}
		for _, kv := range resp.Kvs {
			n.nodes[string(kv.Key)] = string(kv.Value)
		}
	} else {
		n.owners = map[string]map[string]candidate{}
		for _, kv := range resp.Kvs {
			n.putCandidateLocked(kv)
		}
		// An ownership whose key this read, made after it was created, does not show is gone.
		for ws, o := range n.owned {
			if resp.Header.Revision < o.epoch {
				continue
			}
			if c, ok := n.owners[ws][o.key]; !ok || c.rev != o.epoch {
				n.endLocked(o)
			}
		}
	}
	n.notifyLocked()
}

// apply folds watch events into a view.
func (n *Node) apply(pfx string, evs []*clientv3.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	nodes := pfx == nodesPrefix(n.cfg.Prefix)
	for _, ev := range evs {
		key := string(ev.Kv.Key)
		switch {
		case nodes && ev.Type == mvccpb.PUT:
			n.nodes[key] = string(ev.Kv.Value)
		case nodes:
			delete(n.nodes, key)
		case ev.Type == mvccpb.PUT:
			n.putCandidateLocked(ev.Kv)
		default:
			ws, ok := n.workspaceOf(key)
			if !ok {
				continue
			}
			delete(n.owners[ws], key)
			if len(n.owners[ws]) == 0 {
				delete(n.owners, ws)
			}
			// The delete of our election key after we won it ends the ownership (an older delete of the
			// same key, from an earlier term of this node, does not).
			if o := n.owned[ws]; o != nil && o.key == key && ev.Kv.ModRevision > o.epoch {
				n.endLocked(o)
			}
		}
	}
	n.notifyLocked()
}

func (n *Node) putCandidateLocked(kv *mvccpb.KeyValue) {
	ws, ok := n.workspaceOf(string(kv.Key))
	if !ok {
		return
	}
	if n.owners[ws] == nil {
		n.owners[ws] = map[string]candidate{}
	}
	n.owners[ws][string(kv.Key)] = candidate{rev: kv.CreateRevision, advertise: string(kv.Value)}
}

// workspaceOf parses <prefix>/owner/<workspace>/<lease hex>.
func (n *Node) workspaceOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ownerPrefix(n.cfg.Prefix))
	if !ok {
		return "", false
	}
	ws, _, ok := strings.Cut(rest, "/")
	return ws, ok && ws != ""
}

func (n *Node) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// Changed returns a channel that is closed at the next change of Live or of any owner. Take it before
// reading the views, then wait on it: no change is missed.
func (n *Node) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

// Live returns the advertise URLs of the nodes registered with a live lease, sorted. It includes this
// node while it is registered.
func (n *Node) Live() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	live := make([]string, 0, len(n.nodes))
	for _, adv := range n.nodes {
		live = append(live, adv)
	}
	slices.Sort(live)
	return slices.Compact(live)
}

// Owner returns the current owner of a workspace as seen by this node's watch: the election leader (lowest
// create revision under <prefix>/owner/<workspace>/), its advertise URL and epoch. ok is false when no
// node holds the workspace. The view may lag etcd by a watch delay; the owner's fenced writes cannot.
func (n *Node) Owner(workspace string) (advertise string, epoch int64, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := leader(n.owners[workspace])
	return o.Advertise, o.Epoch, ok
}

// Owners returns every owned workspace with its owner, as seen by this node.
func (n *Node) Owners() map[string]Owner {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]Owner, len(n.owners))
	for ws, cs := range n.owners {
		if o, ok := leader(cs); ok {
			out[ws] = o
		}
	}
	return out
}

func leader(cs map[string]candidate) (Owner, bool) {
	var best candidate
	for _, c := range cs {
		if best.rev == 0 || c.rev < best.rev {
			best = c
		}
	}
	return Owner{Advertise: best.advertise, Epoch: best.rev}, best.rev != 0
}
