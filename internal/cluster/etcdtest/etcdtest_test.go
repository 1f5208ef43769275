package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestOneMember: a single member answers writes and reads on the endpoint it reports.
func TestOneMember(t *testing.T) {
	c := Start(t, 1)
	if got := len(c.Endpoints()); got != 1 {
		t.Fatalf("endpoints = %d, want 1", got)
	}
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get k = %v, %v; want v", resp, err)
	}
}

// TestThreeMembersStopRestart: with one of three members stopped the cluster keeps a quorum and
// accepts writes; the restarted member catches up and serves them from its own endpoint.
func TestThreeMembersStopRestart(t *testing.T) {
	c := Start(t, 3)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Stop(0)
	// If member 0 led, a put proposed before the others notice may time out ("previous leader
	// failure"); etcd does not retry writes for the client, so the test does, boundedly.
	var err error
	for range 5 {
		if _, err = cli.Put(ctx, "k", "written-while-m0-down"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("put with 2 of 3 members: %v", err)
	}
	c.Restart(0)
	only0, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoint(0)}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer only0.Close()
	// A linearizable read through member 0 waits until it has caught up with the leader.
	resp, err := only0.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "written-while-m0-down" {
		t.Fatalf("get k via restarted member = %v, %v", resp, err)
	}
	st, err := only0.Status(ctx, c.Endpoint(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints()) != 3 || st.Leader == 0 {
		t.Fatalf("status via member 0: %+v", st)
	}
}
