package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// Router is the Backend of a cluster node: each call goes to the owner of
// its workspace — this node's own Backend, or another node over an
// internal call. When the owner answers "moved", the router looks the owner
// up again and retries (nothing was done), a few times with a short pause.
type Router struct {
	// Local is this node's own data and index.
	Local Backend
	// Route tells who owns a workspace now; it may wait (bounded by ctx) while
	// no node owns it.
	Route func(ctx context.Context, workspace string) (Target, error)
	// Client makes the calls to other nodes.
	Client *Client
	// Valid, when set, is asked after every call: once it is false (this
	// node lost its lease, e.g. it was paused), the answer is unavailable
	// even if the owner elsewhere carried the call out — a node that woke
	// from a pause answers nothing but unavailable.
	Valid func() bool
}

// errInvalid is the answer of a node that lost its lease meanwhile.
var errInvalid = memory.Errorf(memory.CodeUnavailable, "this node lost its connection to the cluster; retry, or use another node")

var _ Backend = (*Router)(nil)

// moveTries bounds the lookups after "moved"; movePause is the first pause
// between them, doubled each time.
const (
	moveTries = 5
	movePause = 50 * time.Millisecond
)

// backend returns who serves the claimed workspaces, all owned by t.
func (r *Router) backend(t Target, claims []claim) Backend {
	if t.Self {
		return r.Local
	}
	return node{c: r.Client, url: t.URL, claims: claims}
}

// on runs f against the owner of workspace ws.
func on[R any](ctx context.Context, r *Router, ws string, f func(b Backend) (R, error)) (R, error) {
	var zero R
	pause := movePause
	for try := 1; ; try++ {
		t, err := r.Route(ctx, ws)
		if err != nil {
			return zero, err
		}
		v, err := f(r.backend(t, []claim{{ws, t.Epoch}}))
		if r.Valid != nil && !r.Valid() {
			return zero, errInvalid
		}
		if !errors.Is(err, ErrMoved) {
			return v, err
		}
		if try == moveTries {
			return zero, &memory.Error{Code: memory.CodeUnavailable,
				Message: fmt.Sprintf("workspace %s is moving to another node; retry", ws), Err: err}
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		pause *= 2
	}
}

func (r *Router) Append(ctx context.Context, ref memory.ProjectRef, w memory.Write) (memory.WriteResult, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (memory.WriteResult, error) { return b.Append(ctx, ref, w) })
}

func (r *Router) Replay(ctx context.Context, ref memory.ProjectRef, slug, key string) (memory.WriteResult, bool, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (replayReply, error) {
		res, ok, err := b.Replay(ctx, ref, slug, key)
		return replayReply{wireResult(res), ok}, err
	})
	return out.Res.result(), out.Replayed, err
}

func (r *Router) Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (memory.Version, int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (getReply, error) {
		v, latest, err := b.Get(ctx, ref, slug, version)
		return getReply{v, latest}, err
	})
	return out.V, out.Latest, err
}

func (r *Router) History(ctx context.Context, ref memory.ProjectRef, slug string, limit int) ([]memory.VersionInfo, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.VersionInfo, error) { return b.History(ctx, ref, slug, limit) })
}

func (r *Router) List(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery) ([]memory.EntrySummary, string, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (listReply, error) {
		es, next, err := b.List(ctx, ref, q)
		return listReply{es, next}, err
	})
	return out.Entries, out.Next, err
}

func (r *Router) WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (int, int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (writtenReply, error) {
		n, bytes, err := b.WrittenSince(ctx, ref, since)
		return writtenReply{n, bytes}, err
	})
	return out.Writes, out.Bytes, err
}

func (r *Router) BudgetUsage(ctx context.Context, ref memory.ProjectRef) (service.BudgetUsage, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (service.BudgetUsage, error) { return b.BudgetUsage(ctx, ref) })
}

// AppendSearchLog sends each workspace's rows to its owner.
func (r *Router) AppendSearchLog(ctx context.Context, rows []memory.SearchLogRow) error {
	byWS := map[string][]memory.SearchLogRow{}
	for _, row := range rows {
		byWS[row.Project.Workspace] = append(byWS[row.Project.Workspace], row)
	}
	var errs []error
	for ws, part := range byWS {
		_, err := on(ctx, r, ws, func(b Backend) (bool, error) { return true, b.AppendSearchLog(ctx, part) })
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *Router) PruneSearchLog(ctx context.Context, ref memory.ProjectRef, before time.Time, keep int) (int, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) (int, error) { return b.PruneSearchLog(ctx, ref, before, keep) })
}

func (r *Router) EntryStats(ctx context.Context, ref memory.ProjectRef) (int, time.Time, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (statsReply, error) {
		n, last, err := b.EntryStats(ctx, ref)
		return statsReply{n, last}, err
	})
	return out.Live, out.LastWrite, err
}

func (r *Router) ListEntries(ctx context.Context, ref memory.ProjectRef, f memory.EntryFilter) ([]memory.EntrySummary, int, error) {
	out, err := on(ctx, r, ref.Workspace, func(b Backend) (entriesReply, error) {
		es, total, err := b.ListEntries(ctx, ref, f)
		return entriesReply{es, total}, err
	})
	return out.Entries, out.Total, err
}

func (r *Router) AuditRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.AuditRow, error) { return b.AuditRows(ctx, ref, f) })
}

func (r *Router) SearchRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.SearchRow, error) { return b.SearchRows(ctx, ref, f) })
}

func (r *Router) MissedQueries(ctx context.Context, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error) {
	return on(ctx, r, ref.Workspace, func(b Backend) ([]memory.MissedQuery, error) { return b.MissedQueries(ctx, ref, since, limit) })
}

// Queue queues the refresh on this node when it owns the workspace; a
// write forwarded to another owner had its refresh queued there before it
// was answered (methods.go), so there is nothing to send. Queue has no
// context in service.Index: the route lookup waits at most queueRouteWait.
func (r *Router) Queue(ref memory.ProjectRef, slug string) error {
	ctx, cancel := context.WithTimeout(context.Background(), queueRouteWait)
	defer cancel()
	t, err := r.Route(ctx, ref.Workspace)
	if err != nil || !t.Self {
		return err
	}
	return r.Local.Queue(ref, slug)
}

const queueRouteWait = 30 * time.Second

// SearchProjects runs the recall on every owner of the projects' workspaces
// and merges the lists by score. Projects on one owner are ranked there with
// the statistics of all of them; across owners, each owner's statistics
// rank its own hits (docs/cluster.md#what-a-cluster-does-not-do). After "moved" the whole recall is
// routed again, a few times.
func (r *Router) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	if len(refs) == 0 {
		return r.Local.SearchProjects(ctx, refs, q)
	}
	return on(ctx, r, refs[0].Workspace, func(Backend) ([]memory.Hit, error) { return r.searchOwners(ctx, refs, q) })
}

func (r *Router) searchOwners(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	groups, err := r.groupByOwner(ctx, refs)
	if err != nil {
		return nil, err
	}
	var hits []memory.Hit
	for _, g := range groups {
		part, err := r.backend(g.t, g.claims).SearchProjects(ctx, g.refs, q)
		if err != nil {
			return nil, err
		}
		if len(groups) == 1 {
			return part, nil
		}
		hits = append(hits, part...)
	}
	return mergeHits(hits, q.Limit), nil
}

// mergeHits orders the hits of several owners as each owner orders its
// own: live hits first, then (with include_stale) the stale ones, each by
// score; and cuts them to limit.
func mergeHits(hits []memory.Hit, limit int) []memory.Hit {
	slices.SortStableFunc(hits, func(a, b memory.Hit) int {
		return cmp.Or(cmp.Compare(staleRank(a), staleRank(b)), cmp.Compare(b.Score, a.Score))
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// staleRank sorts live hits (no State) before stale ones.
func staleRank(h memory.Hit) int {
	if h.State != "" {
		return 1
	}
	return 0
}

// ownerGroup is the projects of one owner and its claims on their workspaces.
type ownerGroup struct {
	t      Target
	refs   []memory.ProjectRef
	claims []claim
}

func (r *Router) groupByOwner(ctx context.Context, refs []memory.ProjectRef) ([]ownerGroup, error) {
	var groups []ownerGroup
	seen := map[string]bool{}
	for _, ref := range refs {
		t, err := r.Route(ctx, ref.Workspace)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(groups, func(g ownerGroup) bool { return g.t.Self == t.Self && g.t.URL == t.URL })
		if i < 0 {
			groups = append(groups, ownerGroup{t: t})
			i = len(groups) - 1
		}
		groups[i].refs = append(groups[i].refs, ref)
		if !seen[ref.Workspace] {
			seen[ref.Workspace] = true
			groups[i].claims = append(groups[i].claims, claim{ref.Workspace, t.Epoch})
		}
	}
	return groups, nil
}
