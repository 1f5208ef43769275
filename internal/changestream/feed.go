package changestream

import (
	"context"
	"time"

	"munin/internal/memory"
)

// Feed is what a stream reads: the service's change feed and its signal.
type Feed interface {
	// Changes reads the changes c may see after req.Since (at most
	// req.Limit), in commit order, and the cursor after them.
	Changes(ctx context.Context, c memory.Caller, req Request) (Result, error)
	// ChangeSignal fires (or closes) when a workspace of c's projects
	// commits a write on this node; stop releases it.
	ChangeSignal(c memory.Caller) (wake <-chan struct{}, stop func())
}

// Request asks the feed for the changes after Since (an opaque cursor,
// "now" for the current end), at most Limit.
type Request struct {
	Since string `json:"since,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// Change is one change of the feed: a version, forget or review decision.
type Change struct {
	Project  string    `json:"project"`
	Slug     string    `json:"slug"`
	Version  int       `json:"version,omitempty"`
	Agent    string    `json:"agent"`
	Kind     string    `json:"kind"`
	At       time.Time `json:"at"`
	Proposal string    `json:"proposal,omitempty"`
}

// Result is one page of the feed and the cursor after it.
type Result struct {
	Changes    []Change `json:"changes"`
	NextCursor string   `json:"next_cursor"`
}
