package cluster

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/cluster/etcdtest"
)

// TestJoinRegisters: a joining node creates the cluster meta (with the secret's fingerprint, never the
// secret), registers itself on its lease, and sees itself live.
func TestJoinRegisters(t *testing.T) {
	c := etcdtest.Start(t, 1)
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001/", 2*time.Second))
	if n.Advertise() != "http://127.0.0.1:9001" {
		t.Errorf("advertise = %q, want the URL without trailing slash", n.Advertise())
	}
	if got := n.Live(); !slices.Equal(got, []string{"http://127.0.0.1:9001"}) {
		t.Errorf("live = %v", got)
	}
	cli := c.Client(t)
	ctx := ctxT(t)
	resp, err := cli.Get(ctx, "/munin/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var sawMeta, sawNode bool
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Value), "s3cret") {
			t.Errorf("%s holds the cluster secret in clear: %s", kv.Key, kv.Value)
		}
		switch string(kv.Key) {
		case "/munin/meta":
			var m meta
			if err := json.Unmarshal(kv.Value, &m); err != nil || m.Schema != "v1" || m.Secret != fingerprint("s3cret") {
				t.Errorf("meta = %s (%v)", kv.Value, err)
			}
			sawMeta = true
		case nodeKey("/munin", "http://127.0.0.1:9001"):
			if kv.Lease != int64(n.LeaseID()) || string(kv.Value) != "http://127.0.0.1:9001" {
				t.Errorf("node key = %s on lease %x, want on %x", kv.Value, kv.Lease, int64(n.LeaseID()))
			}
			sawNode = true
		}
	}
	if !sawMeta || !sawNode {
		t.Fatalf("meta %v, node key %v in %v", sawMeta, sawNode, resp.Kvs)
	}
	if !n.Valid() || closed(n.Done()) || n.Err() != nil {
		t.Fatalf("fresh node not valid: %v", n.Err())
	}
}

// TestJoinDuplicateAdvertiseRefused: while a node with the same advertise URL is alive (its lease kept
// alive, longer than its TTL), a second join is refused with a message naming the URL.
func TestJoinDuplicateAdvertiseRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	first := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	_, err := Join(ctxT(t), testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", time.Second))
	if err == nil || !strings.Contains(err.Error(), "another live node") || !strings.Contains(err.Error(), "http://127.0.0.1:9001") {
		t.Fatalf("second join with the same advertise URL: %v", err)
	}
	if !first.Valid() {
		t.Fatal("the refused join hurt the live node")
	}
	if got := first.Live(); len(got) != 1 {
		t.Fatalf("live = %v", got)
	}
}

// TestJoinAfterCrashSameAdvertise: a node that died without revoking its lease (partitioned away for
// good) leaves its registration behind for one TTL; a restart with the same URL waits that out and joins.
func TestJoinAfterCrashSameAdvertise(t *testing.T) {
	c := etcdtest.Start(t, 1)
	p := newProxy(t, c.Endpoint(0))
	old := joinT(t, testConfig(t, []string{p.Endpoint()}, "http://127.0.0.1:9001", time.Second))
	p.Cut()
	n := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", time.Second))
	if n.LeaseID() == old.LeaseID() || !n.Valid() {
		t.Fatalf("rejoined on lease %x (old %x), valid %v", n.LeaseID(), old.LeaseID(), n.Valid())
	}
	if old.Valid() {
		t.Fatal("the partitioned node still counts itself valid after its successor joined")
	}
}

// TestJoinMetaMismatch: a node with another schema or secret is refused, the message names what differs
// and never the secret, and the refused node leaves no registration behind.
func TestJoinMetaMismatch(t *testing.T) {
	c := etcdtest.Start(t, 1)
	joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	cases := []struct {
		name         string
		schema, sec  string
		want, forbid []string
	}{
		{"schema", "v2", "s3cret", []string{`schema: the cluster has "v1", this node "v2"`}, []string{"cluster secret"}},
		{"secret", "v1", "other-secret", []string{"cluster secret"}, []string{"schema", "other-secret", "s3cret", fingerprint("other-secret")}},
		{"both", "v2", "other-secret", []string{"schema", "cluster secret"}, []string{"other-secret", "s3cret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, c.Endpoints(), "http://127.0.0.1:9002", time.Second)
			cfg.Schema, cfg.Secret = tc.schema, tc.sec
			_, err := Join(ctxT(t), cfg)
			if err == nil {
				t.Fatal("joined a cluster it does not fit")
			}
			for _, w := range append(tc.want, "refused", "/munin/meta") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, f := range tc.forbid {
				if strings.Contains(err.Error(), f) {
					t.Errorf("error %q mentions %q", err, f)
				}
			}
			resp, err := c.Client(t).Get(ctxT(t), nodeKey("/munin", "http://127.0.0.1:9002"))
			if err != nil || len(resp.Kvs) != 0 {
				t.Errorf("refused node registered anyway: %v %v", resp, err)
			}
		})
	}
}

// TestJoinUnreachable: with no etcd at the endpoints, Join fails within the dial timeout and names them.
func TestJoinUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	cfg := testConfig(t, []string{dead, "http://" + dead}, "http://127.0.0.1:9001", time.Second)
	cfg.DialTimeout = 300 * time.Millisecond
	_, err = Join(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "etcd at "+dead+", http://"+dead+" unreachable") {
		t.Fatalf("join with etcd down: %v", err)
	}
}

// TestJoinBadConfig: each bad field is refused before anything is dialled, naming the field.
func TestJoinBadConfig(t *testing.T) {
	good := testConfig(t, []string{"127.0.0.1:1"}, "http://127.0.0.1:9001", time.Second)
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no endpoints", func(c *Config) { c.Endpoints = []string{" "} }, "no etcd endpoints"},
		{"relative advertise", func(c *Config) { c.Advertise = "node-1:8080" }, `advertise URL "node-1:8080"`},
		{"advertise with query", func(c *Config) { c.Advertise = "http://a:1/?x=1" }, "advertise URL"},
		{"short ttl", func(c *Config) { c.LeaseTTL = 500 * time.Millisecond }, "lease TTL 500ms is below the minimum 1s"},
		{"prefix", func(c *Config) { c.Prefix = "munin/" }, `etcd prefix "munin/"`},
		{"schema", func(c *Config) { c.Schema = "" }, "no schema"},
		{"secret", func(c *Config) { c.Secret = "" }, "no cluster secret"},
	}
	for _, tc := range cases {
		cfg := good
		tc.mod(&cfg)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := Join(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestJoinUpgradesSchemaWhenNoNodeRuns: a node of another schema is refused
// while a node of the cluster's runs; once every node stopped (an upgrade),
// it rewrites the record and joins, and now the old schema is refused. A
// node with another secret is refused even then.
func TestJoinUpgradesSchemaWhenNoNodeRuns(t *testing.T) {
	c := etcdtest.Start(t, 1)
	old := joinT(t, testConfig(t, c.Endpoints(), "http://127.0.0.1:9001", 2*time.Second))
	v2 := testConfig(t, c.Endpoints(), "http://127.0.0.1:9002", 2*time.Second)
	v2.Schema = "v2"
	if _, err := Join(ctxT(t), v2); err == nil || !strings.Contains(err.Error(), "nodes of it are running") {
		t.Fatalf("v2 while a v1 node runs: %v, want refused", err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	stranger := v2
	stranger.Secret = "other-secret"
	if _, err := Join(ctxT(t), stranger); err == nil || !strings.Contains(err.Error(), "cluster secret") {
		t.Fatalf("another secret with no node running: %v, want refused", err)
	}
	joinT(t, v2)
	resp, err := c.Client(t).Get(ctxT(t), metaKey("/munin"))
	if err != nil || len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"schema":"v2"`) {
		t.Fatalf("meta after the upgrade: %v %v, want schema v2", resp, err)
	}
	v1 := testConfig(t, c.Endpoints(), "http://127.0.0.1:9003", 2*time.Second)
	if _, err := Join(ctxT(t), v1); err == nil || !strings.Contains(err.Error(), `the cluster has "v2", this node "v1"`) {
		t.Fatalf("v1 after the upgrade: %v, want refused", err)
	}
}
