package service

import (
	"cmp"
	"context"
	"strings"
	"time"

	"munin/internal/memory"
)

// KeyByID returns the live key with this id, or CodeUnauthorized when it is
// unknown or revoked: a web session holds a key id and checks it on every
// request, so revoking a key ends its sessions at once.
func (s *Service) KeyByID(ctx context.Context, id int64) (memory.Key, error) {
	k, err := s.store.KeyByID(ctx, id)
	if memory.ErrorCode(err) == memory.CodeNotFound || (err == nil && k.Revoked) {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "the key of this session was revoked; sign in again")
	}
	if err != nil {
		return memory.Key{}, s.internalErr("key by id", memory.Key{}, err)
	}
	return k, nil
}

// ProjectSummary is one line of the overview.
type ProjectSummary struct {
	Ref memory.ProjectRef
	// Entries counts live entries.
	Entries int
	// LastWrite is the time of the newest version (zero: never written).
	LastWrite time.Time
	// Writes and Budget are this hour's writes and the hourly limit.
	Writes, Budget int
	// Bytes and BytesBudget are this hour's content bytes and the hourly limit.
	Bytes, BytesBudget int
	// Embeddings tells whether meaning search is on; EmbedBacklog then
	// counts live entries still waiting for their vector.
	Embeddings   bool
	EmbedBacklog int
	// EmbedFailing is why meaning search is paused — the embedding
	// endpoint fails, in a fixed sentence anyone reading the project may
	// see — or empty while it answers (or embeddings are off).
	EmbedFailing string
}

// Projects returns the projects the caller may see: every project for a
// server-admin key (counts and budgets only), the projects of its keys for
// any other caller.
func (s *Service) Projects(ctx context.Context, c memory.Caller) ([]ProjectSummary, error) {
	refs := c.Projects()
	if c.ServerAdmin() {
		all, err := s.ListProjects(ctx)
		if err != nil {
			return nil, s.internalErr("list projects", c.First(), err)
		}
		refs = refs[:0]
		for _, p := range all {
			refs = append(refs, p.Ref)
		}
	}
	out := make([]ProjectSummary, 0, len(refs))
	for _, ref := range refs {
		p, err := s.Project(ctx, c, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Project summarizes a project the caller reaches.
func (s *Service) Project(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (ProjectSummary, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return ProjectSummary{}, err
	}
	return s.summary(ctx, key)
}

// summary summarizes the project of key.
func (s *Service) summary(ctx context.Context, key memory.Key) (ProjectSummary, error) {
	p := ProjectSummary{Ref: key.Project}
	var err error
	if p.Entries, p.LastWrite, err = s.store.EntryStats(ctx, key.Project); err != nil {
		return p, s.internalErr("entry stats", key, err)
	}
	u, err := s.budget.BudgetUsage(ctx, key.Project)
	if err != nil {
		return p, s.internalErr("write usage", key, err)
	}
	p.Writes, p.Budget, p.Bytes, p.BytesBudget = u.Writes, u.WriteLimit, u.Bytes, u.ByteLimit
	if s.opts.EmbedBacklog != nil {
		p.Embeddings = true
		if p.EmbedBacklog, err = s.opts.EmbedBacklog(ctx, key.Project); err != nil {
			return p, s.internalErr("embedding backlog", key, err)
		}
	}
	if s.opts.EmbedHealth != nil {
		if failing, reason := s.opts.EmbedHealth(); failing {
			p.EmbedFailing = cmp.Or(reason, "the embedding endpoint fails")
		}
	}
	return p, nil
}

// EntryQuery asks for one page of a project's entries.
type EntryQuery struct {
	Tag    string
	Order  string // memory.OrderUpdated (default), memory.OrderSlug or memory.OrderTitle
	Offset int
	Limit  int // default memory.DefaultListLimit, at most memory.MaxListLimit
	// Forgotten lists the forgotten entries instead of the live ones.
	Forgotten bool
}

// Entries returns one page of the live (or forgotten) entries of a project
// of the caller and how many match in all.
func (s *Service) Entries(ctx context.Context, c memory.Caller, ref memory.ProjectRef, q EntryQuery) ([]memory.EntrySummary, int, error) {
	key, err := s.reader(ctx, c, ref)
	if err != nil {
		return nil, 0, err
	}
	limit, err := bounded("limit", q.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	if err != nil {
		return nil, 0, err
	}
	if q.Tag != "" {
		if err := memory.ValidateTags([]string{q.Tag}); err != nil {
			return nil, 0, err
		}
	}
	entries, total, err := s.store.ListEntries(ctx, key.Project, memory.EntryFilter{
		Tag: q.Tag, Order: q.Order, Offset: q.Offset, Limit: limit, Forgotten: q.Forgotten,
	})
	if err != nil {
		return nil, 0, s.internalErr("list entries", key, err)
	}
	return entries, total, nil
}

// checkFilter validates the free-text parts of a log filter.
func checkFilter(f memory.LogFilter) error {
	if _, err := bounded("limit", f.Limit, memory.DefaultHistoryLimit, memory.MaxHistoryLimit); err != nil {
		return err
	}
	if err := memory.ValidateText("agent", f.Agent, memory.MaxAgent); err != nil {
		return err
	}
	if f.Slug != "" {
		if err := memory.ValidateSlug(strings.TrimSuffix(f.Slug, "/")); err != nil {
			return err
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return memory.Errorf(memory.CodeInvalid, "since (%s) must be before until (%s)", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// AuditLog returns the audit rows of a project of the caller matching f, newest first.
func (s *Service) AuditLog(ctx context.Context, c memory.Caller, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error) {
	key, err := s.reader(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	if f.MissesOnly {
		// Searches without hits are rows of the search log; the audit log
		// has no hit counts to filter by.
		return nil, memory.Errorf(memory.CodeInvalid, "misses applies to the search log, not the audit log")
	}
	// Nobody but its proposer and the reviewers sees a pending or rejected
	// proposal, in the audit log neither.
	f.PrivateReview, f.Viewer = !reviews(c, key), key.Agent
	rows, err := s.store.AuditRows(ctx, key.Project, f)
	if err != nil {
		return nil, s.internalErr("audit log", key, err)
	}
	return rows, nil
}

// SearchLog returns the search-log rows of a project of the caller matching
// f, newest first. Rows still buffered in memory are written first, so a
// search shows up at once.
func (s *Service) SearchLog(ctx context.Context, c memory.Caller, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error) {
	key, err := s.reader(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	s.FlushSearchLog()
	rows, err := s.store.SearchRows(ctx, key.Project, f)
	if err != nil {
		return nil, s.internalErr("search log", key, err)
	}
	return rows, nil
}

// MissedQueries returns the queries of a project of the caller that found
// nothing since the given time, most asked first.
func (s *Service) MissedQueries(ctx context.Context, c memory.Caller, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error) {
	key, err := s.reader(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if limit, err = bounded("limit", limit, memory.DefaultMissedLimit, memory.MaxMissedLimit); err != nil {
		return nil, err
	}
	rows, err := s.store.MissedQueries(ctx, key.Project, since, limit)
	if err != nil {
		return nil, s.internalErr("missed queries", key, err)
	}
	return rows, nil
}

// Restore writes an old version of a slug again as its newest version. It
// is conditional on the latest version it read, so a write that lands in
// between makes it fail with conflict instead of being overwritten.
func (s *Service) Restore(ctx context.Context, c memory.Caller, ref memory.ProjectRef, slug string, version int) (WriteResult, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return WriteResult{}, err
	}
	if err := readsMemory(key); err != nil {
		return WriteResult{}, err
	}
	if version < 1 {
		return WriteResult{}, memory.Errorf(memory.CodeInvalid, "version to restore must be 1 or more, got %d", version)
	}
	if err := writes(key, "restore"); err != nil {
		return WriteResult{}, err
	}
	old, err := s.get(ctx, key, slug, version)
	if err != nil {
		return WriteResult{}, err
	}
	if old.Version == old.LatestVersion {
		return WriteResult{}, memory.Errorf(memory.CodeInvalid, "version %d is already the latest version of %s", version, slug)
	}
	latest := old.LatestVersion
	// c, not a bare key: a person restoring in the web UI writes directly.
	return s.rememberBy(ctx, c, key, RememberRequest{
		Slug:            slug,
		Title:           old.Title,
		Content:         old.Content,
		Tags:            old.Tags,
		ExpectedVersion: &latest,
	})
}
