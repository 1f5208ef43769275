package store

import (
	"context"
	"time"

	"munin/internal/memory"
)

// hooks is a Cluster of optional functions, so that a test sets only the
// calls it watches: a nil one accepts (every project exists) and does
// nothing.
type hooks struct {
	projectExists             func(context.Context, memory.ProjectRef) error
	beforeOpen, afterOpen     func(context.Context, string) error
	beforeCommit, afterCommit func(string) error
	beforeClose               func(string)
}

func (h hooks) ProjectExists(ctx context.Context, ref memory.ProjectRef) error {
	if h.projectExists == nil {
		return nil
	}
	return h.projectExists(ctx, ref)
}

func (h hooks) BeforeOpen(ctx context.Context, ws string) error {
	if h.beforeOpen == nil {
		return nil
	}
	return h.beforeOpen(ctx, ws)
}

func (h hooks) AfterOpen(ctx context.Context, ws string) error {
	if h.afterOpen == nil {
		return nil
	}
	return h.afterOpen(ctx, ws)
}

func (h hooks) BeforeCommit(ws string) error {
	if h.beforeCommit == nil {
		return nil
	}
	return h.beforeCommit(ws)
}

func (h hooks) AfterCommit(ws string) error {
	if h.afterCommit == nil {
		return nil
	}
	return h.afterCommit(ws)
}

func (h hooks) BeforeClose(ws string) {
	if h.beforeClose != nil {
		h.beforeClose(ws)
	}
}

// ackObserver is an Observer that watches replica confirmations only.
type ackObserver func(writes int, waited time.Duration)

func (ackObserver) Batch(int, time.Duration)                      {}
func (o ackObserver) ReplicaAck(writes int, waited time.Duration) { o(writes, waited) }
