package store

import (
	"context"
	"time"

	"munin/internal/memory"
)

// Cluster is what a cluster node adds to the store's write path: who owns a
// workspace, and the replica every acknowledged write must reach. The store
// calls it around each workspace's life on this node — open, every batch,
// close — and for the existence of projects. Options.Cluster nil is a single
// server: the store decides all of this alone.
//
// In Munin the implementation is the application's cluster node
// (internal/app, cluster_store.go): internal/owner's Manager gates opens,
// commits and closes on the ownership and the replica (Litestream, see
// internal/replica), and the cluster's control data in etcd tells which
// projects exist.
//
// With a Cluster set the store also hands the checkpoints of workspace files
// to the replicator: their writer connections never checkpoint on their own
// (see replicatedDriver), so no WAL frame is overwritten before the
// replicator copied it. The control database is not replicated and keeps
// SQLite's automatic checkpoints.
//
// Errors are answers to the store's callers. One of BeforeCommit or
// AfterCommit that is not a *memory.Error becomes code unavailable (the
// caller may retry); those of ProjectExists, BeforeOpen and AfterOpen are
// returned as they are, so they should carry their code (the owner's do:
// unavailable, not_found), else the service answers internal.
type Cluster interface {
	// ProjectExists replaces the control database in telling whether a
	// project exists: nil if it does, else the error to answer (not_found
	// for one that does not). It runs in the caller's goroutine on every
	// store call that names a project, before the workspace is opened; the
	// store does not cache the answer, so it must be cheap (the control
	// data keeps a cache). A workspace whose project it accepts opens
	// without a row in the local control database.
	ProjectExists(ctx context.Context, ref memory.ProjectRef) error

	// BeforeOpen runs once per open of a workspace's file, before the file
	// is opened, in the goroutine of the call that first needs the
	// workspace and with that call's ctx. Meanwhile other callers of the
	// same workspace wait; callers of other workspaces do not. An error
	// fails the open and is that call's answer; the next call tries again.
	// Cluster mode refuses a workspace this node does not own, and restores
	// the file from the replica at the epoch its last owner recorded,
	// replacing whatever local file there was.
	BeforeOpen(ctx context.Context, workspace string) error

	// AfterOpen runs after the file is open and its writer started, before
	// any call uses the workspace, in the same goroutine as BeforeOpen. An
	// error closes the workspace again (BeforeClose runs) and fails the
	// open. Cluster mode checks the file's integrity, starts replicating it
	// into the new epoch, waits for the first complete copy and records the
	// epoch for a successor.
	AfterOpen(ctx context.Context, workspace string) error

	// BeforeCommit runs in the workspace's writer goroutine after a batch's
	// writes were applied and just before its COMMIT; every write of the
	// workspace waits meanwhile, so it must not block. An error rolls the batch
	// back and becomes the answer of every write in it (nothing of it is in the
	// file). Cluster mode refuses once the node may no longer own the workspace,
	// so that a node whose lease ran out commits nothing a successor could miss
	// (invariant 1 (docs/architecture.md#invariant-1-one-writer-per-workspace)
	// across nodes), and, with asynchronous replication, while the replica is too
	// far behind.
	BeforeCommit(workspace string) error

	// AfterCommit runs after COMMIT and before any write of the batch is
	// answered, in the workspace's acker goroutine beside the writer: the writer
	// commits the next batches meanwhile (up to ackQueue of them). One call
	// covers every batch committed before it started, and with Options.AckGather
	// a few that follow (see acker.collect). An error becomes the answer of every
	// write it covers — committed in the local file but not acknowledged (and
	// not in the change feed until a later confirmation covers it), so the
	// caller may retry (with its idempotency key a retry of a surviving write
	// returns the first result). Cluster mode waits here until the replica holds
	// the batches (synchronous replication, invariant 5
	// (docs/architecture.md#invariant-5-acknowledged-writes-survive-a-crash)
	// across nodes) and checks that the node still owns the workspace.
	AfterCommit(workspace string) error

	// BeforeClose runs when a workspace is closed (CloseWorkspace, Close, or
	// a failed AfterOpen), in the closing goroutine, after its writer
	// committed everything queued and every write was answered, and before
	// its connections close. Closing cannot be refused, so it returns
	// nothing; a failure is the implementation's to log. Cluster mode
	// replicates one last time and lets the replicator go.
	BeforeClose(workspace string)
}

// Observer is told what the write path did, for metrics; it decides
// nothing. Its methods run in the writer and acker goroutines of a
// workspace, so they must return at once and must not call the store.
// *metrics.Metrics implements it. Options.Observer nil observes nothing.
//
// It is apart from Cluster because a single server has batches to observe
// too, and because a Cluster's methods decide (their errors refuse writes)
// while an observer cannot fail anything.
type Observer interface {
	// Batch is told, in the writer goroutine after every COMMIT, how many
	// writes the batch carried (those rolled back alone in their savepoint
	// included) and how long it took from BEGIN to COMMIT.
	Batch(writes int, took time.Duration)
	// ReplicaAck is told, in the acker goroutine after every successful
	// Cluster.AfterCommit and after the writes were answered, how many
	// writes it acknowledged and how long the oldest of them waited for it
	// after its COMMIT.
	ReplicaAck(writes int, waited time.Duration)
}
