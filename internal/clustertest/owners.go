//go:build cluster

// Who owns what, read from etcd exactly as the nodes record it: under
// <prefix>/owner/<workspace>/ one election key per campaigning node, its
// value the node's advertise URL; the key with the lowest create revision is
// the owner and that revision is the workspace's epoch.

package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdPrefix is the nodes' default key prefix.
const etcdPrefix = "/munin"

// owner is a workspace's current owner.
type owner struct {
	advertise string
	epoch     int64
}

// readOwners returns every owned workspace's owner, in one linearizable read.
func readOwners(ctx context.Context, cli *clientv3.Client) (map[string]owner, error) {
	p := etcdPrefix + "/owner/"
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read owners: %w", err)
	}
	out := map[string]owner{}
	for _, kv := range resp.Kvs {
		ws, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), p), "/")
		if !ok || ws == "" {
			continue
		}
		if o, seen := out[ws]; !seen || kv.CreateRevision < o.epoch {
			out[ws] = owner{advertise: string(kv.Value), epoch: kv.CreateRevision}
		}
	}
	return out, nil
}

// liveNodes returns the advertise URLs registered under <prefix>/nodes/.
func liveNodes(ctx context.Context, cli *clientv3.Client) (map[string]bool, error) {
	resp, err := cli.Get(ctx, etcdPrefix+"/nodes/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		out[string(kv.Value)] = true
	}
	return out, nil
}

// busiest picks the node (index into advertise) that owns most of the
// workspaces in written; ties are broken at random so that every node gets
// its turn. It returns the node and the workspaces it owns with their
// epochs; ok is false when no node owns any of them.
func busiest(owners map[string]owner, advertise []string, written map[string]bool) (node int, owned map[string]int64, ok bool) {
	per := make([]map[string]int64, len(advertise))
	best := 0
	for ws := range written {
		o, has := owners[ws]
		if !has {
			continue
		}
		for i, a := range advertise {
			if a == o.advertise {
				if per[i] == nil {
					per[i] = map[string]int64{}
				}
				per[i][ws] = o.epoch
				best = max(best, len(per[i]))
			}
		}
	}
	if best == 0 {
		return 0, nil, false
	}
	var top []int
	for i, m := range per {
		if len(m) == best {
			top = append(top, i)
		}
	}
	node = top[rand.IntN(len(top))]
	return node, per[node], true
}

// waitNewOwners polls etcd every 10 ms until each workspace in old has an
// owner at another epoch, and returns for each the time from since until
// that was first seen. Workspaces still without a new owner at the deadline
// are missing from the result.
func waitNewOwners(ctx context.Context, cli *clientv3.Client, old map[string]int64, since, deadline time.Time) map[string]time.Duration {
	got := map[string]time.Duration{}
	for len(got) < len(old) && time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		owners, err := readOwners(rctx, cli)
		cancel()
		now := time.Since(since)
		if err == nil {
			for ws, epoch := range old {
				if o, ok := owners[ws]; ok && o.epoch != epoch {
					if _, done := got[ws]; !done {
						got[ws] = now
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return got
		case <-time.After(10 * time.Millisecond):
		}
	}
	return got
}

// waitNodeGone waits (at most until deadline) until advertise is no longer
// registered: a node restarted at the same URL is refused while its old
// lease still holds the registration.
func waitNodeGone(ctx context.Context, cli *clientv3.Client, advertise string, deadline time.Time) error {
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		live, err := liveNodes(rctx, cli)
		cancel()
		if err == nil && !live[advertise] {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s is still registered in etcd", advertise)
}
