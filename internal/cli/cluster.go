package cli

import "flag"

// adminEtcd declares --etcd and --etcd-prefix on an admin command (key,
// project): with --etcd it administers a cluster's control data instead of
// a data directory.
//
// The admin commands with --etcd need no cluster secret, and do not read
// it. Access to etcd is the trust boundary of a cluster: whoever can write
// under the prefix can write key hashes, ownership records and even the
// secret's fingerprint in /meta directly, with etcdctl — a secret check in
// munin key would stop nobody who holds that access. The secret guards what
// crosses the network without etcd, the nodes' calls to each other, and
// with it one can read any workspace through an owner; handing it to every
// admin's machine would widen it for no gain. So etcd must be protected
// itself (its authentication, client certificates, a firewall).
func adminEtcd(fs *flag.FlagSet) {
	fs.Lookup("etcd").Usage += "; needs no cluster secret: whoever can write to etcd administers the cluster, so protect etcd itself (its authentication, client certificates)"
}

// adminSettings are the settings an admin command takes besides --data
// and --synchronous.
var adminSettings = []string{"etcd", "etcd-prefix"}
