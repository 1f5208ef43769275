package cluster

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"
)

// DefaultCampaignStep is the wait per rank before a node campaigns for an unowned workspace that a
// better-ranked live node should take: long enough for that node to win first, short enough that a
// missing one costs little.
const DefaultCampaignStep = 300 * time.Millisecond

// Rank orders nodes by preference for a workspace with rendezvous (highest-random-weight) hashing: every
// (workspace, node) pair gets a pseudo-random score and the highest score leads. The order of any two nodes
// does not depend on which other nodes exist, so a node joining or leaving moves only the workspaces it
// wins or held, and a dead node's workspaces spread over all survivors instead of landing on one. The
// result is the same on every node; duplicates in nodes are dropped.
func Rank(workspace string, nodes []string) []string {
	type scored struct {
		node  string
		score uint64
	}
	s := make([]scored, 0, len(nodes))
	for _, nd := range nodes {
		s = append(s, scored{nd, score(workspace, nd)})
	}
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.node, b.node)
	})
	out := make([]string, 0, len(s))
	for i, x := range s {
		if i == 0 || x.node != s[i-1].node {
			out = append(out, x.node)
		}
	}
	return out
}

// score hashes the pair with FNV-1a and a splitmix64 finaliser (FNV alone mixes its last bytes poorly).
// It must never change: every node of a cluster has to compute the same ranks.
func score(workspace, node string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(node))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(workspace))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// CampaignDelay says when self should campaign for an unowned workspace: at once if it ranks first among
// the live nodes, else after rank × step, so that the preferred node normally wins and the next one steps
// in only if it does not. ok is false if self is not among live (a node that is not registered does not
// campaign).
func CampaignDelay(workspace, self string, live []string, step time.Duration) (delay time.Duration, ok bool) {
	r := slices.Index(Rank(workspace, live), self)
	if r < 0 {
		return 0, false
	}
	return time.Duration(r) * step, true
}

// CampaignDelay is the package function for this node and its current view of the live nodes.
func (n *Node) CampaignDelay(workspace string, step time.Duration) (time.Duration, bool) {
	return CampaignDelay(workspace, n.cfg.Advertise, n.Live(), step)
}

// Acquire takes a workspace that no node owns, following placement: this node waits rank × step (counted
// from the call, re-ranked whenever the live nodes change) and then tries to take it if it is still
// unowned. It returns the ownership, or an error wrapping ErrOwned as soon as another node owns it. Every
// node may call it for every unowned workspace; normally the best-ranked live node wins.
func (n *Node) Acquire(ctx context.Context, workspace string, step time.Duration) (*Ownership, error) {
	start := time.Now()
	for {
		changed := n.Changed()
		if o := n.Ownership(workspace); o != nil {
			return o, nil
		}
		if adv, epoch, ok := n.Owner(workspace); ok {
			return nil, fmt.Errorf("cluster: acquire workspace %s: %w: %s at epoch %d", workspace, ErrOwned, adv, epoch)
		}
		if err := n.Err(); err != nil {
			return nil, err
		}
		delay, ok := n.CampaignDelay(workspace, step)
		if !ok {
			return nil, fmt.Errorf("cluster: acquire workspace %s: this node (%s) is not among the live nodes", workspace, n.cfg.Advertise)
		}
		wait := time.Until(start.Add(delay))
		if wait <= 0 {
			return n.TryCampaign(ctx, workspace)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("cluster: acquire workspace %s: %w", workspace, ctx.Err())
		case <-n.Done():
			timer.Stop()
		case <-changed:
			timer.Stop()
		case <-timer.C:
		}
	}
}
