//go:build cluster

// The etcd the cluster runs on: real members embedded in the test process
// on 127.0.0.1. The test needs only endpoints and a client, so it talks to
// them through Coordinator. embeddedEtcd is a minimal stand-in for
// internal/cluster/etcdtest until that package is on this branch; then
// startCoordinator becomes `return etcdtest.Start(tb, members)` and
// everything below it in this file goes away (etcdtest.Cluster has the
// same two methods).

package clustertest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Coordinator is a running etcd cluster; the test's cleanup stops it.
type Coordinator interface {
	// Endpoints returns the client URLs of all members.
	Endpoints() []string
	// Client returns a client connected to all members, closed by tb's cleanup.
	Client(tb testing.TB) *clientv3.Client
}

// startCoordinator starts an etcd cluster of members members.
var startCoordinator = func(tb testing.TB, members int) Coordinator { return startEmbedded(tb, members) }

// embeddedEtcd is a set of embed.Etcd members.
type embeddedEtcd struct {
	endpoints []string
	members   []*embed.Etcd
}

// startEmbedded starts n members concurrently (a new cluster's members wait
// for each other), waits at most 30 s until each is ready and registers the
// hard stop of all of them with tb.Cleanup. Raft timings are short (tick
// 50 ms, election 500 ms) so that etcd accepts lease TTLs down to 0.75 s.
func startEmbedded(tb testing.TB, n int) *embeddedEtcd {
	tb.Helper()
	ports := make([]int, 2*n)
	for i := range ports {
		ports[i] = freePort(tb)
	}
	dir := tb.TempDir()
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	e := &embeddedEtcd{members: make([]*embed.Etcd, n)}
	var cfgs []*embed.Config
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		cfg.TickMs, cfg.ElectionMs = 50, 500
		cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = fmt.Sprintf("clustertest-%d", ports[0])
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfgs = append(cfgs, cfg)
		e.endpoints = append(e.endpoints, cu.String())
	}
	tb.Cleanup(e.stop)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m, err := embed.StartEtcd(cfgs[i])
			if err != nil {
				errs[i] = err
				return
			}
			e.members[i] = m
			select {
			case <-m.Server.ReadyNotify():
			case err := <-m.Err():
				errs[i] = err
			case <-time.After(30 * time.Second):
				errs[i] = fmt.Errorf("member %d not ready after 30 s", i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("etcd: %v", err)
		}
	}
	return e
}

// stop hard-stops every member concurrently: a graceful close of a leader
// waits for a transfer to peers that are closing too.
func (e *embeddedEtcd) stop() {
	var wg sync.WaitGroup
	for _, m := range e.members {
		if m != nil {
			wg.Go(func() { m.Server.HardStop(); m.Close() })
		}
	}
	wg.Wait()
}

// Endpoints returns the members' client URLs.
func (e *embeddedEtcd) Endpoints() []string { return e.endpoints }

// Client returns a client of all members; tb's cleanup closes it.
func (e *embeddedEtcd) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatalf("etcd client: %v", err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}
