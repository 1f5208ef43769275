package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// ErrLeaseLost is returned by a node (or an ownership) whose lease is no longer valid or that was closed.
// It is final: the node has to Join again, with a new lease and new epochs.
var ErrLeaseLost = errors.New("cluster: this node's lease is lost")

// Node is this process's membership in a cluster: one etcd client, one lease kept alive by the node
// itself, a registration under <prefix>/nodes/, and watch-fed views of the live nodes and of every
// workspace's owner.
type Node struct {
	cfg    Config
	log    *slog.Logger
	cli    *clientv3.Client
	lease  clientv3.LeaseID
	sess   *concurrency.Session
	window time.Duration // validity after a keepalive's start

	life       context.Context // cancelled when the lease is lost or the node closed
	lifeCancel context.CancelFunc
	stopWatch  context.CancelFunc
	wg         sync.WaitGroup

	mu         sync.Mutex
	until      time.Time // monotonic; the node is valid strictly before it
	lost       bool
	lostReason string
	done       chan struct{}
	closed     bool
	nodes      map[string]string               // etcd key → advertise URL
	owners     map[string]map[string]candidate // workspace → election key → candidate
	owned      map[string]*Ownership           // workspaces this node holds
	campaign   map[string]bool                 // workspaces this node is campaigning for
	ended      map[string]int64                // workspace → epoch of this node's last ended term
	changed    chan struct{}                   // closed and replaced on every view change
	closeOnce  sync.Once
}

// Join connects to etcd, checks that this node fits the cluster (schema, secret, unique advertise URL),
// registers it on a fresh lease and starts keeping that lease alive. The returned node is valid until
// its lease is lost or it is closed; Done tells which moment that is.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      zap.NewNop(),
		Context:     context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd at %s: %w", strings.Join(cfg.Endpoints, ", "), err)
	}
	n, err := join(ctx, cfg, cli)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return n, nil
}

func join(ctx context.Context, cfg Config, cli *clientv3.Client) (*Node, error) {
	// clientv3.New does not connect; the meta check is the first call and tells whether etcd answers.
	if err := checkMeta(ctx, cfg, cli); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: cfg.Logger.With("advertise", cfg.Advertise), cli: cli,
		done: make(chan struct{}), changed: make(chan struct{}),
		nodes: map[string]string{}, owners: map[string]map[string]candidate{},
		owned: map[string]*Ownership{}, campaign: map[string]bool{}, ended: map[string]int64{},
	}
	if err := n.awaitFree(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	gctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	grant, err := cli.Grant(gctx, ttlSeconds(cfg.LeaseTTL))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("cluster: grant lease: %w", err)
	}
	n.lease = grant.ID
	n.window = leaseTimes(cfg.LeaseTTL, grant.TTL)
	n.until = start.Add(n.window)
	if grant.TTL != ttlSeconds(cfg.LeaseTTL) {
		n.log.Warn("etcd granted a different lease TTL", "asked_s", ttlSeconds(cfg.LeaseTTL), "granted_s", grant.TTL)
	}
	if err := n.register(ctx); err != nil {
		n.revoke()
		return nil, err
	}
	// The session only carries the lease into concurrency.Election. Its own keepalive is switched off
	// (cancelled context): the lease must live exactly as long as keepAliveLoop renews it, because that
	// loop is what Valid measures.
	off, offCancel := context.WithCancel(context.Background())
	offCancel()
	n.sess, err = concurrency.NewSession(cli, concurrency.WithLease(n.lease), concurrency.WithContext(off))
	if err != nil {
		n.revoke()
		return nil, fmt.Errorf("cluster: session: %w", err)
	}
	n.life, n.lifeCancel = context.WithCancel(context.Background())
	watchCtx, stopWatch := context.WithCancel(context.Background())
	n.stopWatch = stopWatch
	if err := n.startViews(ctx, watchCtx); err != nil {
		stopWatch()
		n.wg.Wait() // a watch started before the failing read
		n.lifeCancel()
		n.revoke()
		return nil, err
	}
	n.wg.Add(1)
	go n.keepAliveLoop()
	n.log.Info("joined cluster", "lease", fmt.Sprintf("%x", int64(n.lease)), "ttl", cfg.LeaseTTL)
	return n, nil
}

// Advertise returns this node's normalized advertise URL, its identity in the cluster.
func (n *Node) Advertise() string { return n.cfg.Advertise }

// Client returns the node's etcd client, for packages that keep their own data in etcd.
func (n *Node) Client() *clientv3.Client { return n.cli }

// Prefix returns the cluster's etcd key prefix.
func (n *Node) Prefix() string { return n.cfg.Prefix }

// LeaseID returns the node's etcd lease.
func (n *Node) LeaseID() clientv3.LeaseID { return n.lease }

// Valid reports whether the node may still act as an owner: its lease was renewed recently enough that
// etcd cannot have expired it yet. Once false it stays false.
func (n *Node) Valid() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.validLocked(time.Now())
}

func (n *Node) validLocked(now time.Time) bool {
	if n.lost {
		return false
	}
	if !now.Before(n.until) {
		n.loseLocked("lease not renewed in time")
		return false
	}
	return true
}

// ValidUntil returns the moment (monotonic clock) from which the node no longer counts as valid, unless
// a keepalive extends it first; once the node is lost, the moment validity ended. An owner acknowledges a
// write only if it is still before this moment after the write is durable.
func (n *Node) ValidUntil() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.until
}

// Done is closed when the node's lease is lost or expired, or the node is closed. It is final.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns nil while the node is valid, else ErrLeaseLost wrapped with the reason.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.validLocked(time.Now()) {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrLeaseLost, n.lostReason)
}

// loseLocked makes the node invalid for good: Done closes, campaigns stop, every ownership is lost, and
// the lease is revoked in the background so that other nodes need not wait for it to expire.
func (n *Node) loseLocked(reason string) {
	if n.lost {
		return
	}
	n.lost, n.lostReason = true, reason
	if now := time.Now(); now.Before(n.until) {
		n.until = now // ValidUntil now tells when validity ended
	}
	close(n.done)
	if n.lifeCancel != nil {
		n.lifeCancel()
	}
	for _, o := range n.owned {
		n.endLocked(o)
	}
	if !n.closed {
		n.log.Warn("cluster lease lost; this node owns nothing until it joins again", "reason", reason)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.revoke()
		}()
	}
}

// keepAliveLoop renews the lease every TTL/3 with KeepAliveOnce and moves the validity deadline to the
// call's start + window. A renewal that answers after the deadline does not revive the node.
func (n *Node) keepAliveLoop() {
	defer n.wg.Done()
	interval := n.cfg.LeaseTTL / 3
	retry := max(50*time.Millisecond, interval/4)
	next := time.NewTimer(interval)
	defer next.Stop()
	for {
		n.mu.Lock()
		until, lost := n.until, n.lost
		n.mu.Unlock()
		if lost {
			return
		}
		deadline := time.NewTimer(time.Until(until))
		select {
		case <-n.life.Done():
			deadline.Stop()
			return
		case <-deadline.C:
			n.mu.Lock()
			n.validLocked(time.Now())
			n.mu.Unlock()
			continue
		case <-next.C:
			deadline.Stop()
		}
		start := time.Now()
		ctx, cancel := context.WithDeadline(n.life, until)
		resp, err := n.cli.KeepAliveOnce(ctx, n.lease)
		cancel()
		n.mu.Lock()
		switch {
		case !n.validLocked(time.Now()):
			// Too late (or closed meanwhile): even a successful renewal does not revive the node.
		case err == nil:
			n.until = start.Add(leaseTimes(n.cfg.LeaseTTL, resp.TTL))
			next.Reset(interval - time.Since(start)) // every TTL/3 from start to start, however slow etcd answers
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			n.loseLocked("lease expired at etcd")
		default:
			n.log.Warn("lease keepalive failed; retrying", "err", err, "valid_for", time.Until(n.until).Round(time.Millisecond))
			next.Reset(retry)
		}
		n.mu.Unlock()
	}
}

// revoke releases the lease, which deletes the node's registration and election keys at once.
func (n *Node) revoke() {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.DialTimeout)
	defer cancel()
	if _, err := n.cli.Revoke(ctx, n.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.log.Warn("revoke lease", "err", err)
	}
}

// Close leaves the cluster: the node becomes invalid, its lease is revoked (so its workspaces are free
// at once), the watches stop and the etcd client is closed. Safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		wasLost := n.lost
		n.loseLocked("node closed")
		n.mu.Unlock()
		n.stopWatch()
		n.wg.Wait()
		if !wasLost {
			n.revoke()
		}
		_ = n.cli.Close()
		n.log.Info("left cluster")
	})
	return nil
}
