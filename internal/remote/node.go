package remote

import (
	"context"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// Backend is what a workspace's owner serves: its data and its index.
type Backend interface {
	Data
	service.Index
}

// Data is an owner's data half: its store, with the write budget counted
// there (service.Budgeted), which therefore also answers a project's usage.
type Data interface {
	service.DataStore
	service.UsageReader
}

// node is a Backend on another node: every method is one internal call to
// the owner at url, claiming that it owns the workspaces the call touches
// at the epochs the router learnt.
type node struct {
	c      *Client
	url    string
	claims []claim
}

// claim is a workspace and the epoch of its owner as the caller knows it.
type claim struct {
	Workspace string
	Epoch     int64
}

var _ Backend = node{}

func (n node) Append(ctx context.Context, ref memory.ProjectRef, w memory.Write) (memory.WriteResult, error) {
	r, err := invoke[appendArgs, writeResult](ctx, n, "Append", appendArgs{ref, w})
	return r.result(), err
}

func (n node) Replay(ctx context.Context, ref memory.ProjectRef, slug, key string) (memory.WriteResult, bool, error) {
	r, err := invoke[replayArgs, replayReply](ctx, n, "Replay", replayArgs{ref, slug, key})
	return r.Res.result(), r.Replayed, err
}

func (n node) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	r, err := invoke[getArgs, getReply](ctx, n, "Get", getArgs{ref, slug, version})
	return r.V, r.Latest, err
}

func (n node) History(ctx context.Context, ref memory.ProjectRef, slug string, limit int) ([]memory.VersionInfo, error) {
	return invoke[historyArgs, []memory.VersionInfo](ctx, n, "History", historyArgs{ref, slug, limit})
}

func (n node) List(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery) ([]memory.EntrySummary, string, error) {
	r, err := invoke[listArgs, listReply](ctx, n, "List", listArgs{ref, q})
	return r.Entries, r.Next, err
}

func (n node) WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (int, int, error) {
	r, err := invoke[sinceArgs, writtenReply](ctx, n, "WrittenSince", sinceArgs{Ref: ref, Since: since})
	return r.Writes, r.Bytes, err
}

func (n node) BudgetUsage(ctx context.Context, ref memory.ProjectRef) (service.BudgetUsage, error) {
	return invoke[refArgs, service.BudgetUsage](ctx, n, "BudgetUsage", refArgs{ref})
}

// logChunk bounds the search-log rows of one call, so that a call stays
// far below the request body cap (a row carries a query of up to 1 KB).
const logChunk = 256

// AppendSearchLog sends rows that all belong to workspaces of this owner
// (the router groups them), in chunks.
func (n node) AppendSearchLog(ctx context.Context, rows []memory.SearchLogRow) error {
	for len(rows) > 0 {
		part := rows[:min(len(rows), logChunk)]
		rows = rows[len(part):]
		if _, err := invoke[logArgs, bool](ctx, n, "AppendSearchLog", logArgs{part}); err != nil {
			return err
		}
	}
	return nil
}

func (n node) PruneSearchLog(ctx context.Context, ref memory.ProjectRef, before time.Time, keep int) (int, error) {
	return invoke[pruneArgs, int](ctx, n, "PruneSearchLog", pruneArgs{ref, before, keep})
}

func (n node) EntryStats(ctx context.Context, ref memory.ProjectRef) (int, time.Time, error) {
	r, err := invoke[refArgs, statsReply](ctx, n, "EntryStats", refArgs{ref})
	return r.Live, r.LastWrite, err
}

func (n node) ListEntries(ctx context.Context, ref memory.ProjectRef, f memory.EntryFilter) ([]memory.EntrySummary, int, error) {
	r, err := invoke[entriesArgs, entriesReply](ctx, n, "ListEntries", entriesArgs{ref, f})
	return r.Entries, r.Total, err
}

func (n node) AuditRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error) {
	return invoke[filterArgs, []memory.AuditRow](ctx, n, "AuditRows", filterArgs{ref, f})
}

func (n node) SearchRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error) {
	return invoke[filterArgs, []memory.SearchRow](ctx, n, "SearchRows", filterArgs{ref, f})
}

func (n node) MissedQueries(ctx context.Context, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error) {
	return invoke[sinceArgs, []memory.MissedQuery](ctx, n, "MissedQueries", sinceArgs{ref, since, limit})
}

// Queue sends nothing: a write forwarded to this owner had its refresh
// queued there before it was answered (methods.go).
func (n node) Queue(memory.ProjectRef, string) error { return nil }

// SearchProjects searches projects that all live in workspaces of this
// owner (the router groups them).
func (n node) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	hs, err := invoke[searchArgs, []hit](ctx, n, "SearchProjects", searchArgs{refs, q})
	return hitsOf(hs), err
}
