//go:build cluster

// The cluster test: three embedded etcd members, three `munin serve
// --cluster` processes replicating with litestream to a directory, agents
// over MCP through different nodes (some with propose keys, their proposals
// approved and rejected over REST through nodes that do not own the
// workspace), rounds of kill -9 of the busiest owner and its restart empty,
// one owner paused with SIGSTOP; nothing acknowledged — version, proposal or
// decision — may be lost, and no approval applied twice (see
// internal/clustertest and LASTTEST.md).
//
//	go test -tags cluster -run TestCluster -v . [-cluster.runden=20] [-cluster.ttl=2s] [-cluster.modus=sync]
//
// The machinery lives in internal/clustertest; its -cluster.* flags are
// registered on the standard flag set when the package is imported here.
package main

import (
	"testing"

	"munin/internal/clustertest"
)

// TestCluster runs the cluster test against built munin processes.
func TestCluster(t *testing.T) { clustertest.Run(t) }
