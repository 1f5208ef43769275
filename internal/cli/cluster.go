package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"munin/internal/app"
	"munin/internal/cluster"
	"munin/internal/owner"
)

// clusterSecretEnv holds the cluster secret. It has no flag: a flag's value
// shows in ps and /proc/*/cmdline.
const clusterSecretEnv = "MUNIN_CLUSTER_SECRET"

// clusterFlags declares serve's cluster flags; finish applies them after
// parsing.
func clusterFlags(fs *flag.FlagSet, cfg *app.Config) (finish func() error) {
	cc := &cfg.Cluster
	fs.BoolVar(&cc.Enabled, "cluster", false, "run as one node of a cluster: ownership in etcd, workspace files streamed to --replica (env MUNIN_CLUSTER)")
	etcd := etcdFlags(fs, cfg)
	fs.StringVar(&cc.Advertise, "advertise", "", "this node's base URL as the other nodes reach it, e.g. http://10.0.0.5:8080 (env MUNIN_ADVERTISE; cluster secret from env "+clusterSecretEnv+")")
	fs.StringVar(&cc.Replica, "replica", "", "where workspace files stream to: file:///dir or s3://bucket/path (env MUNIN_REPLICA)")
	fs.DurationVar(&cc.LeaseTTL, "lease-ttl", cluster.DefaultLeaseTTL, "how long a dead node holds its workspaces; a paused one stops writing before it runs out (env MUNIN_LEASE_TTL)")
	mode := fs.String("replication", "sync", "sync: a write is acknowledged once the replica holds it; async: at once, the replica follows within a second (env MUNIN_REPLICATION)")
	fs.DurationVar(&cc.LagMax, "replica-lag-max", owner.DefaultLagMax, "async: past this replication lag writes answer unavailable (env MUNIN_REPLICA_LAG_MAX)")
	fs.StringVar(&cc.Litestream, "litestream", "", "the litestream binary (env MUNIN_LITESTREAM; empty: litestream on PATH or in GOPATH/bin)")
	return func() error {
		if err := etcd(); err != nil {
			return err
		}
		cc.Secret = os.Getenv(clusterSecretEnv)
		switch *mode {
		case "sync":
		case "async":
			cc.Async = true
		default:
			return fmt.Errorf("--replication must be sync or async, got %q", *mode)
		}
		if !cc.Enabled {
			return nil
		}
		if cc.LeaseTTL < cluster.MinLeaseTTL {
			return fmt.Errorf("--lease-ttl must be at least %s, got %s", cluster.MinLeaseTTL, cc.LeaseTTL)
		}
		return nil
	}
}

// etcdFlags declares --etcd and --etcd-prefix, which cluster nodes and the
// admin commands of a cluster share.
//
// The admin commands (key, project) with --etcd need no cluster secret, and
// do not read it. Access to etcd is the trust boundary of a cluster: whoever
// can write under the prefix can write key hashes, ownership records and
// even the secret's fingerprint in /meta directly, with etcdctl — a secret
// check in munin key would stop nobody who holds that access. The secret
// guards what crosses the network without etcd, the nodes' calls to each
// other, and with it one can read any workspace through an owner; handing
// it to every admin's machine would widen it for no gain. So etcd must be
// protected itself (its authentication, client certificates, a firewall).
func etcdFlags(fs *flag.FlagSet, cfg *app.Config) (finish func() error) {
	endpoints := fs.String("etcd", "", "comma-separated etcd endpoints of the cluster, e.g. http://10.0.0.1:2379 (env MUNIN_ETCD)")
	fs.StringVar(&cfg.Cluster.Prefix, "etcd-prefix", "", "etcd key prefix of the cluster (env MUNIN_ETCD_PREFIX; default /munin)")
	return func() error {
		for _, e := range strings.Split(*endpoints, ",") {
			if e = strings.TrimSpace(e); e != "" {
				cfg.Cluster.Etcd = append(cfg.Cluster.Etcd, e)
			}
		}
		return nil
	}
}

// adminEtcdUsage is added to --etcd's help on the admin commands.
const adminEtcdUsage = "; needs no cluster secret: whoever can write to etcd administers the cluster, so protect etcd itself (its authentication, client certificates)"
