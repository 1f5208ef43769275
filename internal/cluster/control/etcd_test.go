package control

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"munin/internal/cluster/etcdtest"
)

// testEtcd is one embedded etcd member on 127.0.0.1 for a test.
type testEtcd struct {
	c        *etcdtest.Cluster
	endpoint string
	stopOnce sync.Once
}

// startEtcd starts a one-member etcd, stopped in t.Cleanup.
func startEtcd(t testing.TB) *testEtcd {
	t.Helper()
	c := etcdtest.Start(t, 1)
	return &testEtcd{c: c, endpoint: c.Endpoint(0)}
}

// stop stops the member (again: nothing).
func (te *testEtcd) stop() { te.stopOnce.Do(func() { te.c.Stop(0) }) }

// cut stops the member in the background and returns once cli's reads
// fail. (etcd's Close waits up to 6 s for open watch streams; they end when
// the test's Controls close, before stop runs in t.Cleanup.)
func (te *testEtcd) cut(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	go te.stop()
	eventually(t, "etcd stops answering", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "probe")
		return err != nil
	})
}

// client returns a new client of the member, closed in t.Cleanup.
func (te *testEtcd) client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{te.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// openControl opens a Control on its own client of te, closed in t.Cleanup
// (before the client: cleanups run last in, first out).
func openControl(t testing.TB, te *testEtcd, opts Options) *Control {
	t.Helper()
	cli := te.client(t)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := Open(context.Background(), cli, opts)
	if err != nil {
		t.Fatalf("control.Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// freePort returns a port that was free a moment ago (an etcd that is not there).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
