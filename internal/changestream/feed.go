package changestream

import (
	"context"

	"munin/internal/memory"
	"munin/internal/service"
)

// Feed is what a stream reads: the service's change feed and its signal
// (*service.Service; tests use a feed in memory).
type Feed interface {
	// Changes reads the changes c may see after req.Since (at most
	// req.Limit), in commit order, and the cursor after them.
	Changes(ctx context.Context, c memory.Caller, req Request) (Result, error)
	// ChangeSignal fires (or closes) when a workspace of c's projects
	// commits a write on this node; stop releases it.
	ChangeSignal(c memory.Caller) (wake <-chan struct{}, stop func())
	// KeyByID returns a key that is still valid; a revoked one is
	// memory.CodeUnauthorized.
	KeyByID(ctx context.Context, id int64) (memory.Key, error)
}

// The feed's types, the service's.
type (
	Request = service.ChangesRequest
	Change  = service.Change
	Result  = service.ChangesResult
	// Unavailable is a project a page could not read (Result.Unavailable).
	Unavailable = service.Unavailable
)
