package service

import (
	"context"
	"time"

	"munin/internal/memory"
)

// AsOfStore is the part of DataStore that reads the memory as it was at a
// time (stage 11): get, list and history with as_of.
type AsOfStore interface {
	// GetAsOf is Get as of at: version (0: the latest created at or before
	// at), the latest version number then, and the supersession in force
	// then; not_found before the slug's first version.
	GetAsOf(ctx context.Context, ref memory.ProjectRef, slug string, version int, at time.Time) (v memory.Version, latest int, err error)
	// ListAsOf is List of the entries live (not forgotten) at at.
	ListAsOf(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery, at time.Time) (entries []memory.EntrySummary, nextCursor string, err error)
	// HistoryAsOf is History of the versions created at or before at.
	HistoryAsOf(ctx context.Context, ref memory.ProjectRef, slug string, limit int, at time.Time) ([]memory.VersionInfo, error)
}
