package remote

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"

	"munin/internal/memory"
)

// The change feed (service.ChangesStore) in a cluster: a workspace's feed
// is read at its owner, like every read of its file. A cursor holds the
// file's identity and audit ids, which move with the file to a new owner
// (the replica is a copy of the file), so a cursor stays valid across a
// failover. Commit signals are this node's own writes; a live reader also
// reads the feed now and then for the rest.

// feedArgs are the arguments of FeedRead.
type feedArgs struct {
	Workspace string
	Q         memory.FeedQuery
}

// feedMethods adds the server side of FeedRead. FeedSecret and OnCommit
// are answered by each node itself, never asked of another.
func feedMethods(d Data, m map[string]handler) {
	serve(m, "FeedRead", func(ctx context.Context, a feedArgs) (memory.FeedPage, error) {
		return d.FeedRead(ctx, a.Workspace, a.Q)
	})
}

// FeedRead reads the feed of workspace ws at its owner.
func (r *Router) FeedRead(ctx context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	return on(ctx, r, ws, func(b Backend) (memory.FeedPage, error) { return b.FeedRead(ctx, ws, q) })
}

// feedSecretLabel is what the cluster secret signs to make the cursor
// secret: a key of its own, so that a cursor never doubles as anything
// the cluster secret authenticates.
const feedSecretLabel = "munin change feed cursor v1"

// FeedSecret derives the cursor secret from the cluster secret, which
// every node holds: each node accepts every node's cursors, before and
// after a failover, without a secret of its own to agree on. (A single
// server keeps a drawn secret in its control database instead,
// store.FeedSecret.) A cluster secret that changes invalidates the cursors.
func (r *Router) FeedSecret(context.Context) ([]byte, error) {
	if r.Client == nil || r.Client.Secret == "" {
		return nil, memory.Errorf(memory.CodeUnavailable, "this node has no cluster secret to sign change-feed cursors with")
	}
	m := hmac.New(sha256.New, []byte(r.Client.Secret))
	m.Write([]byte(feedSecretLabel))
	return m.Sum(nil), nil
}

// OnCommit listens to this node's own commits (Local): a workspace
// another node owns commits there.
func (r *Router) OnCommit(workspaces []string, wake func()) func() {
	if r.Local == nil {
		return func() {}
	}
	return r.Local.OnCommit(workspaces, wake)
}

// FeedRead asks the owner.
func (n node) FeedRead(ctx context.Context, ws string, q memory.FeedQuery) (memory.FeedPage, error) {
	return invoke[feedArgs, memory.FeedPage](ctx, n, "FeedRead", feedArgs{ws, q})
}

// FeedSecret is never asked of another node (the router derives it).
func (n node) FeedSecret(context.Context) ([]byte, error) {
	return nil, memory.Errorf(memory.CodeInternal, "the feed secret is not asked of another node")
}

// OnCommit of another node: its commits are not heard here.
func (n node) OnCommit([]string, func()) func() { return func() {} }
