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

// OpenClusterAdmin opens a cluster's control data for the admin commands
// (key, project) with --etcd: no node joins and no workspace file is
// reached — the service's data calls answer unavailable.
func OpenClusterAdmin(cfg Config) (*App, error) {
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
	return &App{cfg: cfg, log: cfg.Logger, Svc: svc, closeFn: func() error {
		return errors.Join(svc.Close(), ctl.Close(), cli.Close())
	}}, nil
}
