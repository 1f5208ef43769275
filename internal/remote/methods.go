package remote

import (
	"context"
	"log/slog"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
)

// The arguments and answers of the internal calls, one pair per method of
// Data and service.Index (named as in Go). A method that returns only an
// error answers true.

type refArgs struct{ Ref memory.ProjectRef }

type appendArgs struct {
	Ref memory.ProjectRef
	W   memory.Write
}

// writeResult is a memory.WriteResult with Replayed, which its JSON leaves out.
type writeResult struct {
	memory.WriteResult
	Replayed bool
}

func wireResult(r memory.WriteResult) writeResult { return writeResult{r, r.Replayed} }

func (w writeResult) result() memory.WriteResult {
	r := w.WriteResult
	r.Replayed = w.Replayed
	return r
}

// hit is a memory.Hit with Project, which its JSON leaves out.
type hit struct {
	memory.Hit
	Project memory.ProjectRef
}

func wireHits(hs []memory.Hit) []hit {
	out := make([]hit, len(hs))
	for i, h := range hs {
		out[i] = hit{h, h.Project}
	}
	return out
}

func hitsOf(ws []hit) []memory.Hit {
	out := make([]memory.Hit, len(ws))
	for i, w := range ws {
		out[i] = w.Hit
		out[i].Project = w.Project
	}
	return out
}

type replayArgs struct {
	Ref       memory.ProjectRef
	Slug, Key string
}

type replayReply struct {
	Res      writeResult
	Replayed bool
}

type getArgs struct {
	Ref     memory.ProjectRef
	Slug    string
	Version int
}

type getReply struct {
	V      memory.Version
	Latest int
}

type historyArgs struct {
	Ref   memory.ProjectRef
	Slug  string
	Limit int
}

type listArgs struct {
	Ref memory.ProjectRef
	Q   memory.ListQuery
}

type listReply struct {
	Entries []memory.EntrySummary
	Next    string
}

type sinceArgs struct {
	Ref   memory.ProjectRef
	Since time.Time
	Limit int
}

type writtenReply struct{ Writes, Bytes int }

type logArgs struct{ Rows []memory.SearchLogRow }

type pruneArgs struct {
	Ref    memory.ProjectRef
	Before time.Time
	Keep   int
}

type statsReply struct {
	Live      int
	LastWrite time.Time
}

type entriesArgs struct {
	Ref    memory.ProjectRef
	Filter memory.EntryFilter
}

type entriesReply struct {
	Entries []memory.EntrySummary
	Total   int
}

type filterArgs struct {
	Ref memory.ProjectRef
	F   memory.LogFilter
}

type searchArgs struct {
	Refs []memory.ProjectRef
	Q    memory.SearchQuery
}

// dataMethods are the server sides of service.DataStore's methods. A
// forwarded Append also queues its index refresh here, on the owner, before
// it answers (read-your-writes); the caller's router then has nothing to
// send for Queue, which saves the second hop of every write.
func dataMethods(d Data, x service.Index, log *slog.Logger) map[string]handler {
	m := map[string]handler{}
	serve(m, "Append", func(ctx context.Context, a appendArgs) (writeResult, error) {
		res, err := d.Append(ctx, a.Ref, a.W)
		if err == nil && !res.Replayed {
			if qerr := x.Queue(a.Ref, a.W.Slug); qerr != nil {
				log.Error("index refresh not queued", "project", a.Ref.String(), "slug", a.W.Slug, "err", qerr)
			}
		}
		return wireResult(res), err
	})
	serve(m, "Replay", func(ctx context.Context, a replayArgs) (replayReply, error) {
		res, ok, err := d.Replay(ctx, a.Ref, a.Slug, a.Key)
		return replayReply{wireResult(res), ok}, err
	})
	serve(m, "Get", func(ctx context.Context, a getArgs) (getReply, error) {
		v, latest, err := d.Get(ctx, a.Ref, a.Slug, a.Version)
		return getReply{v, latest}, err
	})
	serve(m, "History", func(ctx context.Context, a historyArgs) ([]memory.VersionInfo, error) {
		return d.History(ctx, a.Ref, a.Slug, a.Limit)
	})
	serve(m, "List", func(ctx context.Context, a listArgs) (listReply, error) {
		es, next, err := d.List(ctx, a.Ref, a.Q)
		return listReply{es, next}, err
	})
	serve(m, "WrittenSince", func(ctx context.Context, a sinceArgs) (writtenReply, error) {
		n, b, err := d.WrittenSince(ctx, a.Ref, a.Since)
		return writtenReply{n, b}, err
	})
	serve(m, "BudgetUsage", func(ctx context.Context, a refArgs) (service.BudgetUsage, error) { return d.BudgetUsage(ctx, a.Ref) })
	serve(m, "AppendSearchLog", func(ctx context.Context, a logArgs) (bool, error) { return true, d.AppendSearchLog(ctx, a.Rows) })
	serve(m, "PruneSearchLog", func(ctx context.Context, a pruneArgs) (int, error) {
		return d.PruneSearchLog(ctx, a.Ref, a.Before, a.Keep)
	})
	serve(m, "EntryStats", func(ctx context.Context, a refArgs) (statsReply, error) {
		n, last, err := d.EntryStats(ctx, a.Ref)
		return statsReply{n, last}, err
	})
	serve(m, "ListEntries", func(ctx context.Context, a entriesArgs) (entriesReply, error) {
		es, total, err := d.ListEntries(ctx, a.Ref, a.Filter)
		return entriesReply{es, total}, err
	})
	serve(m, "AuditRows", func(ctx context.Context, a filterArgs) ([]memory.AuditRow, error) {
		return d.AuditRows(ctx, a.Ref, a.F)
	})
	serve(m, "SearchRows", func(ctx context.Context, a filterArgs) ([]memory.SearchRow, error) {
		return d.SearchRows(ctx, a.Ref, a.F)
	})
	serve(m, "MissedQueries", func(ctx context.Context, a sinceArgs) ([]memory.MissedQuery, error) {
		return d.MissedQueries(ctx, a.Ref, a.Since, a.Limit)
	})
	reviewMethods(d, x, log, m)
	asOfMethods(d, m)
	similarSettingMethods(d, m)
	feedMethods(d, m)
	return m
}

// indexMethods are the server sides of service.Index's methods.
func indexMethods(x service.Index) map[string]handler {
	m := map[string]handler{}
	serve(m, "SearchProjects", func(ctx context.Context, a searchArgs) ([]hit, error) {
		hs, err := x.SearchProjects(ctx, a.Refs, a.Q)
		return wireHits(hs), err
	})
	similarMethods(x, m)
	return m
}
