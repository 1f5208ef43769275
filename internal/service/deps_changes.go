package service

import (
	"context"

	"munin/internal/memory"
)

// ChangesStore is the part of DataStore the change feed needs (changes.go,
// docs/changes.md). It sits with the data half because each answer
// belongs to where the data lives: a workspace's rows to its file (its
// owner, in a cluster), the commit signal to the node whose writer
// commits, and the cursor secret to what a cursor must be valid on (one
// server's own store, or every node of a cluster).
type ChangesStore interface {
	// FeedRead reads a workspace's audit rows of some projects after a
	// position, in id order, bounded, with the file's identity and its
	// end, in one snapshot; a position of another file is invalid.
	FeedRead(ctx context.Context, workspace string, q memory.FeedQuery) (memory.FeedPage, error)
	// FeedSecret is the key the cursors are signed with.
	FeedSecret(ctx context.Context) ([]byte, error)
	// OnCommit calls wake (which must not block) after each write batch
	// committed on this node to one of the workspaces, until stop.
	OnCommit(workspaces []string, wake func()) (stop func())
}
