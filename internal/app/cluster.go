package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"munin/internal/cluster"
	"munin/internal/cluster/control"
	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/owner"
	"munin/internal/remote"
	"munin/internal/replica"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// ClusterConfig makes the server one node of a cluster: the cluster
// section of the settings (internal/config).
type ClusterConfig = config.Cluster

// checkCluster refuses a cluster configuration that cannot work.
func checkCluster(c ClusterConfig) error {
	if !c.Enabled {
		return nil
	}
	switch {
	case len(c.Etcd) == 0:
		return errors.New("cluster: --etcd names no endpoint")
	case c.Advertise == "":
		return errors.New("cluster: --advertise is required (this node's URL as the others reach it)")
	case c.Replica == "":
		return errors.New("cluster: --replica is required (file:///dir or s3://bucket/path)")
	case len(c.Secret) < 16:
		return errors.New("cluster: MUNIN_CLUSTER_SECRET must hold the cluster secret (at least 16 characters, the same on every node)")
	}
	return replica.CheckBaseURL(c.Replica)
}

// clusterNode is what cluster mode adds to a server.
type clusterNode struct {
	cfg     ClusterConfig
	node    *cluster.Node
	sidecar *replica.Sidecar
	control *control.Control
	mgr     *owner.Manager
	binary  string
	log     *slog.Logger
	// budget counts the writes to the workspaces this node owns (set by
	// wire, read by the store's AfterOpen hook).
	budget atomic.Pointer[service.Budgeted]
}

// joinCluster joins etcd, starts the replicator and opens the shared
// control data. On error everything started is stopped again.
func joinCluster(ctx context.Context, cfg Config) (*clusterNode, error) {
	cc := cfg.Cluster
	binary := cc.Litestream
	if binary == "" {
		b, err := replica.Binary()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		binary = b
	}
	schema, err := store.SchemaVersion()
	if err != nil {
		return nil, err
	}
	node, err := cluster.Join(ctx, cluster.Config{Endpoints: cc.Etcd, Advertise: cc.Advertise, LeaseTTL: cc.LeaseTTL,
		Prefix: cc.Prefix, Schema: fmt.Sprintf("%s index/%d wire/%d", schema, search.IndexFormat, remote.WireVersion), Secret: cc.Secret, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	cn := &clusterNode{cfg: cc, node: node, binary: binary, log: cfg.Logger}
	cn.sidecar, err = replica.Start(ctx, replica.Options{Binary: binary, Dir: filepath.Join(cfg.Storage.DataDir, ".litestream"),
		Logger: cfg.Logger, OnRestart: func(ctx context.Context) { cn.mgr.Reregister(ctx) }})
	if err != nil {
		return nil, errors.Join(err, node.Close())
	}
	cn.control, err = control.Open(ctx, node.Client(), control.Options{Prefix: node.Prefix(), Logger: cfg.Logger})
	if err != nil {
		return nil, errors.Join(err, cn.sidecar.Stop(), node.Close())
	}
	cn.mgr = owner.New(membership{node}, replicator{cn.sidecar, binary, cc.Replica}, owner.Options{
		DataDir: cfg.Storage.DataDir, Async: cc.Async, LagMax: cc.LagMax,
		RouteWait: 3*cc.LeaseTTL + 5*time.Second, Rank: cluster.Rank, Logger: cfg.Logger,
	})
	return cn, nil
}

// localBackend is this node's own data and index, served to the router and
// to the other nodes.
type localBackend struct {
	remote.Data
	service.Index
}

// wire routes the service's data and index through the owners, and
// returns the handler of the other nodes' calls to this one. The write
// budget is counted where the data lives: svc's budget options wrap this
// node's store, and svc asks the owners for a project's usage.
func (cn *clusterNode) wire(st *store.Store, index service.Index, svc *service.Options) (service.Store, service.Index, http.Handler) {
	owned := service.NewOwnerBudgeted(cn.control, st, *svc)
	cn.budget.Store(owned)
	cn.mgr.SetStore(st)
	cn.mgr.Follow(cn.node.Changed, cn.control.Workspaces)
	local := localBackend{owned, index}
	router := &remote.Router{Local: local, Route: cn.mgr.Route, Client: &remote.Client{Secret: cn.cfg.Secret}, Valid: cn.node.Valid}
	internal := remote.Handler(owned, index, remote.ServerOptions{Secret: cn.cfg.Secret, Node: cn.node.Advertise(),
		Owns: cn.mgr.Owns, Logger: cn.log})
	svc.BudgetAtOwner = router
	return service.Split{ControlStore: cn.control, DataStore: router}, router, internal
}

// ready is false once the node lost its lease: it then answers
// unavailable to everything and must be restarted to rejoin.
func (cn *clusterNode) ready(context.Context) error {
	if !cn.node.Valid() {
		return memory.Errorf(memory.CodeUnavailable, "this node lost its cluster lease (%v) and is stopping; it rejoins when started again", cn.node.Err())
	}
	return nil
}

// lost is closed once the node's lease is lost (never on a single server).
func (cn *clusterNode) lost() <-chan struct{} {
	if cn == nil {
		return nil
	}
	return cn.node.Done()
}

// handOver closes every workspace this node owns (a last sync each) and
// resigns, so that successors take over at once.
func (cn *clusterNode) handOver() error {
	if cn != nil {
		cn.mgr.Close()
	}
	return nil
}

// close leaves the cluster: control data, replicator, lease.
func (cn *clusterNode) close() error {
	if cn == nil {
		return nil
	}
	cn.mgr.Close()
	return errors.Join(cn.control.Close(), cn.sidecar.Stop(), cn.node.Close())
}

// registerClusterMetrics adds what only a node shows: replica
// confirmations, the replication lag and the lease.
func registerClusterMetrics(m *metrics.Metrics, cn *clusterNode) {
	m.Cluster(cn.mgr.Lag, cn.node.Valid)
}

// membership adapts cluster.Node to owner.Cluster.
type membership struct{ n *cluster.Node }

func (m membership) Self() string   { return m.n.Advertise() }
func (m membership) Valid() bool    { return m.n.Valid() }
func (m membership) Live() []string { return m.n.Live() }
func (m membership) Owner(ws string) (string, int64, bool) {
	return m.n.Owner(ws)
}
func (m membership) PreviousEpoch(ctx context.Context, ws string) (int64, error) {
	return m.n.PreviousEpoch(ctx, ws)
}

// Campaign takes the workspace only if it is free: a node queued behind
// the owner would inherit it on the owner's death whatever the placement.
func (m membership) Campaign(ctx context.Context, ws string) (owner.Claim, error) {
	o, err := m.n.TryCampaign(ctx, ws)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// replicator adapts the litestream sidecar to owner.Replicator.
type replicator struct {
	sc     *replica.Sidecar
	binary string
	base   string
}

func (r replicator) Register(ctx context.Context, path, url string) error {
	return r.sc.StartEpoch(ctx, path, url)
}
func (r replicator) Resume(ctx context.Context, path, url string) error {
	return r.sc.Register(ctx, path, url)
}
func (r replicator) Sync(ctx context.Context, path string) error {
	_, err := r.sc.Sync(ctx, path)
	return err
}
func (r replicator) Unregister(ctx context.Context, path string) error {
	_, err := r.sc.Unregister(ctx, path)
	return err
}
func (r replicator) Restore(ctx context.Context, url, out string) (bool, error) {
	_, err := replica.Restore(ctx, r.binary, url, out, replica.RestoreOptions{})
	if errors.Is(err, replica.ErrReplicaEmpty) {
		return true, nil
	}
	return false, err
}
func (r replicator) EpochURL(ws string, epoch int64) string {
	return replica.EpochURL(r.base, ws, epoch)
}
