package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// meta is the cluster-wide record every joining node is checked against.
type meta struct {
	Schema string `json:"schema"`
	Secret string `json:"secret"` // hex SHA-256 of the cluster secret
}

func metaKey(prefix string) string { return prefix + "/meta" }

func nodeKey(prefix, advertise string) string { return nodesPrefix(prefix) + url.PathEscape(advertise) }

// checkMeta creates <prefix>/meta if the cluster is new, else compares it with this node's schema and
// secret fingerprint. It is Join's first etcd call, so it also reports an unreachable etcd.
//
// Another schema is refused while any node is registered; with none (every node stopped: an upgrade)
// the first node of the new version rewrites the record, and the others of its version follow.
func checkMeta(ctx context.Context, cfg Config, cli *clientv3.Client) error {
	for try := 0; ; try++ {
		// retry: the rewrite failed, maybe because a node of this version
		// rewrote the record first; one more comparison tells.
		retry, err := checkMetaOnce(ctx, cfg, cli)
		if !retry || try > 0 {
			return err
		}
	}
}

// checkMetaOnce is one round of checkMeta; retry says only the schema differed and the rewrite failed.
func checkMetaOnce(ctx context.Context, cfg Config, cli *clientv3.Client) (retry bool, err error) {
	key := metaKey(cfg.Prefix)
	mine := meta{Schema: cfg.Schema, Secret: fingerprint(cfg.Secret)}
	val, err := json.Marshal(mine)
	if err != nil {
		return false, fmt.Errorf("cluster: encode meta: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	resp, err := cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return false, unreachable(ctx, cfg, err)
	}
	if resp.Succeeded {
		cfg.Logger.Info("created cluster meta", "key", key, "schema", cfg.Schema)
		return false, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	var theirs meta
	if len(kvs) != 1 || json.Unmarshal(kvs[0].Value, &theirs) != nil {
		return false, fmt.Errorf("cluster: %s in etcd is not a Munin cluster record; is prefix %q used by something else?", key, cfg.Prefix)
	}
	if theirs.Secret == mine.Secret && theirs.Schema != mine.Schema {
		// Only the schema differs: an upgrade, if no node of the old one runs.
		up, err := cli.Txn(cctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision),
				clientv3.Compare(clientv3.CreateRevision(nodesPrefix(cfg.Prefix)).WithPrefix(), "=", 0)).
			Then(clientv3.OpPut(key, string(val))).Commit()
		if err != nil {
			return false, unreachable(ctx, cfg, err)
		}
		if up.Succeeded {
			cfg.Logger.Warn("cluster schema changed: no node was running", "key", key, "from", theirs.Schema, "to", mine.Schema)
			return false, nil
		}
	}
	var diffs []string
	if theirs.Schema != mine.Schema {
		diffs = append(diffs, fmt.Sprintf("schema: the cluster has %q, this node %q, and nodes of it are running (run the same Munin version on every node; to upgrade, stop every node, then start them with the new version)", theirs.Schema, mine.Schema))
	}
	if theirs.Secret != mine.Secret {
		diffs = append(diffs, "cluster secret: this node's secret differs from the one the cluster was created with (compared by SHA-256 fingerprint; every node needs the same secret)")
	}
	if len(diffs) > 0 {
		err := fmt.Errorf("cluster: node %s refused by the cluster at %s (%s): %s",
			cfg.Advertise, strings.Join(cfg.Endpoints, ", "), key, strings.Join(diffs, "; "))
		// A rewrite that failed because another node rewrote first is worth one more look.
		return theirs.Secret == mine.Secret, err
	}
	return false, nil
}

// unreachable turns the error of Join's first call into one that names the endpoints.
func unreachable(ctx context.Context, cfg Config, err error) error {
	eps := strings.Join(cfg.Endpoints, ", ")
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: join etcd at %s: %w", eps, ctx.Err())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cluster: etcd at %s unreachable: no answer within %v (down, wrong address, or no quorum)", eps, cfg.DialTimeout)
	}
	return fmt.Errorf("cluster: etcd at %s unreachable: %w", eps, err)
}

// awaitFree returns once no registration holds this node's advertise URL. A registration that is there
// may belong to a live node (refuse) or to this node's previous incarnation that died without revoking
// its lease: such a key vanishes within that lease's remaining TTL, so awaitFree waits that long (plus two
// seconds) for it to go before refusing. A live node renews its lease and never lets it go. It runs
// before the node's own lease is granted, which nothing keeps alive yet.
func (n *Node) awaitFree(ctx context.Context) error {
	key := nodeKey(n.cfg.Prefix, n.cfg.Advertise)
	for attempt := 0; attempt < 3; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
		resp, err := n.cli.Get(cctx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: register node %s: %w", n.cfg.Advertise, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		other := clientv3.LeaseID(resp.Kvs[0].Lease)
		if gone, err := n.waitGone(ctx, key, other, resp.Header.Revision); err != nil {
			return err
		} else if !gone {
			return n.duplicate(key, other)
		}
	}
	return fmt.Errorf("cluster: register node %s: the key %s keeps changing", n.cfg.Advertise, key)
}

func (n *Node) duplicate(key string, other clientv3.LeaseID) error {
	return fmt.Errorf("cluster: node %s refused: another live node is registered with the same advertise URL (etcd key %s, lease %x); give every node its own advertise URL",
		n.cfg.Advertise, key, int64(other))
}

// register puts <prefix>/nodes/<advertise> on the node's lease, only if no key is there.
func (n *Node) register(ctx context.Context) error {
	key := nodeKey(n.cfg.Prefix, n.cfg.Advertise)
	cctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
	resp, err := n.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, n.cfg.Advertise, clientv3.WithLease(n.lease))).
		Else(clientv3.OpGet(key)).Commit()
	cancel()
	if err != nil {
		return fmt.Errorf("cluster: register node %s: %w", n.cfg.Advertise, err)
	}
	if !resp.Succeeded {
		var other clientv3.LeaseID
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			other = clientv3.LeaseID(kvs[0].Lease)
		}
		return n.duplicate(key, other)
	}
	return nil
}

// waitGone waits until key is deleted, at most the remaining TTL of its lease plus two seconds.
func (n *Node) waitGone(ctx context.Context, key string, lease clientv3.LeaseID, rev int64) (bool, error) {
	// TimeToLive truncates to whole seconds, and etcd looks for expired leases every 500 ms: one second
	// for each on top of the remaining TTL.
	wait := 2 * time.Second
	tctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
	ttl, err := n.cli.TimeToLive(tctx, lease)
	cancel()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return true, nil // expired meanwhile: its keys are gone with it
	}
	if err != nil {
		return false, fmt.Errorf("cluster: register node %s: lease of the existing registration: %w", n.cfg.Advertise, err)
	}
	if ttl.TTL > 0 {
		wait += time.Duration(ttl.TTL) * time.Second
	}
	n.log.Info("advertise URL is registered already; waiting for that lease to expire", "key", key, "wait", wait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for wr := range n.cli.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return true, nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("cluster: register node %s: %w", n.cfg.Advertise, err)
	}
	return false, nil
}
