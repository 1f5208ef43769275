// Package etcdtest runs real etcd members inside a test process (go.etcd.io/etcd/server/v3/embed) on
// 127.0.0.1, so that cluster code is tested against etcd itself rather than a fake. It is imported only
// by tests — never by the munin binary, which speaks to etcd as a client.
//
// Members use short raft timings (heartbeat 50 ms, election 500 ms) so that a test sees leader changes
// quickly; note that etcd raises any lease TTL below 1.5 × the election timeout (0.75 s) to that minimum.
package etcdtest

import (
	"errors"
	"fmt"
	"net"
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

// Timings every member runs with.
const (
	TickMs     = 50
	ElectionMs = 500
	// ReadyTimeout bounds how long Start waits for every member to be ready.
	ReadyTimeout = 20 * time.Second
	// startAttempts bounds the retries when a free port was taken between picking and binding it.
	startAttempts = 3
)

// Cluster is a set of embedded etcd members started by Start and closed by the test's cleanup.
type Cluster struct {
	tb      testing.TB
	mu      sync.Mutex
	cfgs    []*embed.Config
	members []*embed.Etcd  // nil while a member is stopped
	closing sync.WaitGroup // background closes of stopped members
}

// Start starts an etcd cluster of the given number of members (1 for unit tests, 3 for cluster tests),
// waits until every member is ready and registers its shutdown with tb.Cleanup. It fails the test if the
// cluster does not come up within ReadyTimeout.
func Start(tb testing.TB, members int) *Cluster {
	tb.Helper()
	if members < 1 {
		tb.Fatalf("etcdtest: %d members: need at least 1", members)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		c := &Cluster{tb: tb}
		if lastErr = c.start(tb, members); lastErr == nil {
			tb.Cleanup(c.closeAll)
			return c
		}
		c.closeAll()
		if !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	tb.Fatalf("etcdtest: start %d members: %v", members, lastErr)
	return nil
}

func (c *Cluster) start(tb testing.TB, n int) error {
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	dir := tb.TempDir()
	names := make([]string, n)
	var initial []string
	for i := range n {
		names[i] = fmt.Sprintf("m%d", i)
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", names[i], ports[2*i+1]))
	}
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = names[i]
		cfg.Dir = filepath.Join(dir, names[i])
		cfg.TickMs, cfg.ElectionMs = TickMs, ElectionMs
		cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = fmt.Sprintf("etcdtest-%d", ports[0])
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		c.cfgs = append(c.cfgs, cfg)
	}
	c.members = make([]*embed.Etcd, n)
	// Members of a new cluster wait for each other, so they must start concurrently.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = c.startMember(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startMember starts member i from its config and waits for it to be ready.
func (c *Cluster) startMember(i int) error {
	e, err := embed.StartEtcd(c.cfgs[i])
	if err != nil {
		return fmt.Errorf("member %s: %w", c.cfgs[i].Name, err)
	}
	c.mu.Lock()
	c.members[i] = e
	c.mu.Unlock()
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("member %s: %w", c.cfgs[i].Name, err)
	case <-time.After(ReadyTimeout):
		return fmt.Errorf("member %s not ready after %v", c.cfgs[i].Name, ReadyTimeout)
	}
}

// closeAll closes every running member concurrently (one after another costs about a second each).
func (c *Cluster) closeAll() {
	c.mu.Lock()
	ms := c.members
	c.members = make([]*embed.Etcd, len(ms))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range ms {
		if e != nil {
			wg.Go(func() { hardClose(e) })
		}
	}
	wg.Wait()
	c.closing.Wait()
}

// hardClose stops a member without handing its leadership over first: a graceful Close of a leader
// waits for a transfer to peers that are closing too, several seconds per cluster.
func hardClose(e *embed.Etcd) {
	if e.Server != nil {
		e.Server.HardStop()
	}
	e.Close()
}

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.cfgs) }

// Endpoints returns the client URLs of all members ("http://127.0.0.1:port"), stopped ones included.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.cfgs))
	for i := range c.cfgs {
		eps[i] = c.Endpoint(i)
	}
	return eps
}

// Endpoint returns the client URL of member i.
func (c *Cluster) Endpoint(i int) string { return c.cfgs[i].AdvertiseClientUrls[0].String() }

// Client returns a client connected to all members; the test's cleanup closes it.
func (c *Cluster) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcdtest: client: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Stop stops member i at once, as a crash would (minus the lost fsyncs): its raft node halts and every
// request to it fails. Closing its connections and listeners finishes in the background, because a
// graceful gRPC stop waits up to the request timeout (~6 s) for clients' watch and keepalive streams.
// Restart brings it back.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i]
	c.members[i] = nil
	if e != nil {
		c.closing.Add(1)
	}
	c.mu.Unlock()
	if e == nil {
		return
	}
	if e.Server != nil {
		e.Server.HardStop()
	}
	go func() {
		defer c.closing.Done()
		e.Close()
	}()
}

// Restart starts a stopped member i again on its old ports and data directory and waits until it is
// ready. It fails the test if the member does not come back.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	c.mu.Lock()
	running := c.members[i] != nil
	c.mu.Unlock()
	if running {
		c.tb.Fatalf("etcdtest: restart member %d: it is running", i)
	}
	// Its ports must be free again: wait for the background close of Stop.
	c.closing.Wait()
	// The data directory holds the membership now; the initial-cluster settings are ignored.
	c.cfgs[i].ClusterState = embed.ClusterStateFlagExisting
	if err := c.startMember(i); err != nil {
		c.tb.Fatalf("etcdtest: restart: %v", err)
	}
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1. They are free when returned; another
// process may take one before etcd binds it, which Start answers by retrying.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
