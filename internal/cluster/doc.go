// Package cluster is Munin's membership and ownership layer on etcd: which nodes are alive, which node
// owns (is the single writer of) each workspace, at which epoch, and where a dead node's workspaces go.
// It decides nothing about data; the store, replication and forwarding use what it says.
//
// Keys under the cluster prefix (default "/munin"):
//
//	<p>/meta                       {"schema": "...", "secret": "<hex SHA-256 of the cluster secret>"}; first node creates it
//	<p>/nodes/<escaped advertise>  the node's advertise URL, on the node's lease; created only if absent
//	<p>/owner/<workspace>/<lease>  concurrency.Election candidates; the first-created one owns, and its
//	                               create revision is the workspace's EPOCH
//	<p>/ws/<workspace>/epoch       the epoch of the last owner that opened the workspace for writing (fenced)
//
// Guarantees:
//   - A node counts itself valid (Node.Valid) only until the start of its last successful keepalive +
//     TTL − max(250 ms, TTL/10), measured on the monotonic clock; etcd cannot expire the lease earlier. So
//     a paused or partitioned owner stops counting itself valid before any other node can win its
//     workspaces. Lost validity is final (Node.Done): the process must Join again, with a new lease.
//   - Every etcd write an owner makes about its workspace goes through Ownership.Txn, which etcd commits
//     only while the election key still has the owner's epoch as create revision (ErrNotOwner otherwise).
//   - Placement is rendezvous hashing (Rank): a dead node's workspaces spread over all survivors.
//     Acquire applies it: every node may ask for every unowned workspace; the best-ranked live node tries
//     at once (TryCampaign, which leaves no waiting candidacy), the others only after rank × step.
//
// The lease is renewed by this package's own loop (KeepAliveOnce every TTL/3), not by clientv3's
// KeepAlive, because the validity deadline must be derived from renewals the node has seen succeed.
package cluster
