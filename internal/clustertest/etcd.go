//go:build cluster

// The etcd the cluster runs on: real members embedded in the test process
// on 127.0.0.1 (internal/cluster/etcdtest). The test needs only endpoints
// and a client, so it talks to them through Coordinator.

package clustertest

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/cluster/etcdtest"
)

// Coordinator is a running etcd cluster; the test's cleanup stops it.
type Coordinator interface {
	// Endpoints returns the client URLs of all members.
	Endpoints() []string
	// Client returns a client connected to all members, closed by tb's cleanup.
	Client(tb testing.TB) *clientv3.Client
}

// startCoordinator starts an etcd cluster of members members.
func startCoordinator(tb testing.TB, members int) Coordinator { return etcdtest.Start(tb, members) }
