package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"munin/internal/cluster/control"
	"munin/internal/memory"
	"munin/internal/remote"
	"munin/internal/service"
)

// adminDialTimeout bounds reaching etcd for an admin command.
const adminDialTimeout = 5 * time.Second

// ClusterAdmin is a cluster's control data opened for the admin commands
// (key, project) with --etcd: keys and projects live in etcd, no node
// joins and no workspace file is reached. It is a type of its own rather
// than an App with most fields unset: it has no store, index, MCP server or
// HTTP handler, so nothing can reach one that is not there.
type ClusterAdmin struct {
	// Svc is the service over the control data: keys and projects work;
	// every data call (entries, recall, logs) answers unavailable.
	Svc *service.Service

	ctl *control.Control
	cli *clientv3.Client
}

// OpenClusterAdmin connects to the cluster's etcd (cfg.Cluster.Etcd and
// Prefix) and opens its control data; it fails at once when etcd does not
// answer within adminDialTimeout.
func OpenClusterAdmin(cfg Config) (*ClusterAdmin, error) {
	eps := strings.Join(cfg.Cluster.Etcd, ", ")
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Cluster.Etcd, DialTimeout: adminDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd at %s: %w", eps, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminDialTimeout)
	defer cancel()
	prefix := cfg.Cluster.Prefix
	if prefix == "" {
		prefix = control.DefaultPrefix
	}
	if _, err := cli.Get(ctx, prefix+"/meta"); err != nil {
		return nil, errors.Join(fmt.Errorf("etcd at %s unreachable: %w", eps, err), cli.Close())
	}
	ctl, err := control.Open(ctx, cli, control.Options{Prefix: prefix, Logger: cfg.Logger})
	if err != nil {
		return nil, errors.Join(err, cli.Close())
	}
	noData := &remote.Router{Route: func(context.Context, string) (remote.Target, error) {
		return remote.Target{}, memory.Errorf(memory.CodeUnavailable, "an admin command of a cluster reaches no workspace data; use a node's API")
	}}
	svc := service.New(service.Split{ControlStore: ctl, DataStore: noData}, noData, service.Options{Logger: cfg.Logger, SearchLogOff: true})
	return &ClusterAdmin{Svc: svc, ctl: ctl, cli: cli}, nil
}

// Close closes the service, the control data and the etcd client.
func (a *ClusterAdmin) Close() error {
	return errors.Join(a.Svc.Close(), a.ctl.Close(), a.cli.Close())
}
