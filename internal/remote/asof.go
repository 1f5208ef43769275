package remote

import (
	"context"
	"time"

	"munin/internal/memory"
)

// The as-of reads (service.AsOfStore) go to the workspace's owner like
// Get, List and History.

type getAsOfArgs struct {
	Ref     memory.ProjectRef
	Slug    string
	Version int
	At      time.Time
}

type listAsOfArgs struct {
	Ref memory.ProjectRef
	Q   memory.ListQuery
	At  time.Time
}

type historyAsOfArgs struct {
	Ref   memory.ProjectRef
	Slug  string
	Limit int
	At    time.Time
}

// asOfMethods adds the server sides of the as-of reads.
func asOfMethods(d Data, m map[string]handler) {
	serve(m, "GetAsOf", func(ctx context.Context, a getAsOfArgs) (getReply, error) {
		v, latest, err := d.GetAsOf(ctx, a.Ref, a.Slug, a.Version, a.At)
		return getReply{v, latest}, err
	})
	serve(m, "ListAsOf", func(ctx context.Context, a listAsOfArgs) (listReply, error) {
		es, next, err := d.ListAsOf(ctx, a.Ref, a.Q, a.At)
		return listReply{es, next}, err
	})
	serve(m, "HistoryAsOf", func(ctx context.Context, a historyAsOfArgs) ([]memory.VersionInfo, error) {
		return d.HistoryAsOf(ctx, a.Ref, a.Slug, a.Limit, a.At)
	})
}

func (n node) GetAsOf(ctx context.Context, ref memory.ProjectRef, slug string, version int, at time.Time) (memory.Version, int, error) {
	r, err := invoke[getAsOfArgs, getReply](ctx, n, "GetAsOf", getAsOfArgs{ref, slug, version, at})
	return r.V, r.Latest, err
}

func (n node) ListAsOf(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery, at time.Time) ([]memory.EntrySummary, string, error) {
	r, err := invoke[listAsOfArgs, listReply](ctx, n, "ListAsOf", listAsOfArgs{ref, q, at})
	return r.Entries, r.Next, err
}

func (n node) HistoryAsOf(ctx context.Context, ref memory.ProjectRef, slug string, limit int, at time.Time) ([]memory.VersionInfo, error) {
	return invoke[historyAsOfArgs, []memory.VersionInfo](ctx, n, "HistoryAsOf", historyAsOfArgs{ref, slug, limit, at})
}

// GetAsOf reads from the owner of ref's workspace.
func (r *Router) GetAsOf(ctx context.Context, ref memory.ProjectRef, slug string, version int, at time.Time) (memory.Version, int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (getReply, error) {
		v, latest, err := b.GetAsOf(ctx, ref, slug, version, at)
		return getReply{v, latest}, err
	})
	return out.V, out.Latest, err
}

// ListAsOf reads from the owner of ref's workspace.
func (r *Router) ListAsOf(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery, at time.Time) ([]memory.EntrySummary, string, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (listReply, error) {
		es, next, err := b.ListAsOf(ctx, ref, q, at)
		return listReply{es, next}, err
	})
	return out.Entries, out.Next, err
}

// HistoryAsOf reads from the owner of ref's workspace.
func (r *Router) HistoryAsOf(ctx context.Context, ref memory.ProjectRef, slug string, limit int, at time.Time) ([]memory.VersionInfo, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.VersionInfo, error) {
		return b.HistoryAsOf(ctx, ref, slug, limit, at)
	})
}
