package service

import (
	"context"
	"strings"
	"time"

	"munin/internal/memory"
)

// BrowseStore is what the browse use cases need of storage beyond Store;
// *store.Store implements it.
type BrowseStore interface {
	// EntryStats counts live entries and returns the time of the last write.
	EntryStats(ctx context.Context, ref memory.ProjectRef) (live int, lastWrite time.Time, err error)
	// ListEntries returns a page of live entries in an order, and the total.
	ListEntries(ctx context.Context, ref memory.ProjectRef, tag, order string, offset, limit int) ([]memory.EntrySummary, int, error)
	// AuditRows returns filtered audit rows, newest first.
	AuditRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error)
	// SearchRows returns filtered search-log rows, newest first.
	SearchRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error)
	// MissedQueries returns queries without hits since a time, most asked first.
	MissedQueries(ctx context.Context, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error)
	// KeyByID returns a key by id, revoked or not.
	KeyByID(ctx context.Context, id int64) (memory.Key, error)
}

// Browser holds the use cases of people browsing and curating memory (the
// web UI). It writes only through Service, so a person's edit goes through
// the same role check, budget, audit log and index refresh as an agent's.
type Browser struct {
	svc   *Service
	store BrowseStore
}

// NewBrowser builds the browse use cases over svc and its store.
func NewBrowser(svc *Service, st BrowseStore) *Browser {
	return &Browser{svc: svc, store: st}
}

// Service returns the service the browser writes through.
func (b *Browser) Service() *Service { return b.svc }

// KeyByID returns the live key with this id, or CodeUnauthorized when it is
// unknown or revoked: a web session holds a key id and checks it on every
// request, so revoking a key ends its sessions at once.
func (b *Browser) KeyByID(ctx context.Context, id int64) (memory.Key, error) {
	k, err := b.store.KeyByID(ctx, id)
	if memory.ErrorCode(err) == memory.CodeNotFound || (err == nil && k.Revoked) {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "the key of this session was revoked; sign in again")
	}
	if err != nil {
		return memory.Key{}, b.svc.internalErr("key by id", memory.Key{}, err)
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
}

// Projects returns the projects key may see: every project for a
// server-admin key (counts and budgets only), its own project for any other.
func (b *Browser) Projects(ctx context.Context, key memory.Key) ([]ProjectSummary, error) {
	refs := []memory.ProjectRef{key.Project}
	if key.ServerAdmin() {
		all, err := b.svc.ListProjects(ctx)
		if err != nil {
			return nil, b.svc.internalErr("list projects", key, err)
		}
		refs = refs[:0]
		for _, p := range all {
			refs = append(refs, p.Ref)
		}
	}
	out := make([]ProjectSummary, 0, len(refs))
	for _, ref := range refs {
		key.Project = ref
		p, err := b.Project(ctx, key)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Project summarizes the project of key (scope it first with Service.Scope).
func (b *Browser) Project(ctx context.Context, key memory.Key) (ProjectSummary, error) {
	p := ProjectSummary{Ref: key.Project}
	var err error
	if p.Entries, p.LastWrite, err = b.store.EntryStats(ctx, key.Project); err != nil {
		return p, b.svc.internalErr("entry stats", key, err)
	}
	w, err := b.svc.budget.usage(ctx, key.Project)
	if err != nil {
		return p, b.svc.internalErr("write usage", key, err)
	}
	p.Writes, p.Budget, p.Bytes, p.BytesBudget = w.used, w.limit.writes, w.bytes, w.limit.bytes
	return p, nil
}

// EntryQuery asks for one page of a project's entries.
type EntryQuery struct {
	Tag    string
	Order  string // memory.OrderUpdated (default), memory.OrderSlug or memory.OrderTitle
	Offset int
	Limit  int // default DefaultListLimit, at most MaxListLimit
}

// Entries returns one page of the live entries of key's project and how many
// match in all.
func (b *Browser) Entries(ctx context.Context, key memory.Key, q EntryQuery) ([]memory.EntrySummary, int, error) {
	if err := readsMemory(key); err != nil {
		return nil, 0, err
	}
	limit, err := bounded("limit", q.Limit, DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, 0, err
	}
	if q.Tag != "" {
		if err := memory.ValidateTags([]string{q.Tag}); err != nil {
			return nil, 0, err
		}
	}
	entries, total, err := b.store.ListEntries(ctx, key.Project, q.Tag, q.Order, q.Offset, limit)
	if err != nil {
		return nil, 0, b.svc.internalErr("list entries", key, err)
	}
	return entries, total, nil
}

// checkFilter validates the free-text parts of a log filter.
func checkFilter(f memory.LogFilter) error {
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

// AuditLog returns the audit rows of key's project matching f, newest first.
func (b *Browser) AuditLog(ctx context.Context, key memory.Key, f memory.LogFilter) ([]memory.AuditRow, error) {
	if err := readsMemory(key); err != nil {
		return nil, err
	}
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	rows, err := b.store.AuditRows(ctx, key.Project, f)
	if err != nil {
		return nil, b.svc.internalErr("audit log", key, err)
	}
	return rows, nil
}

// SearchLog returns the search-log rows of key's project matching f, newest
// first. Rows still buffered in memory are written first, so a search shows
// up at once.
func (b *Browser) SearchLog(ctx context.Context, key memory.Key, f memory.LogFilter) ([]memory.SearchRow, error) {
	if err := readsMemory(key); err != nil {
		return nil, err
	}
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	b.svc.FlushSearchLog()
	rows, err := b.store.SearchRows(ctx, key.Project, f)
	if err != nil {
		return nil, b.svc.internalErr("search log", key, err)
	}
	return rows, nil
}

// MissedQueries returns the queries of key's project that found nothing
// since the given time, most asked first.
func (b *Browser) MissedQueries(ctx context.Context, key memory.Key, since time.Time, limit int) ([]memory.MissedQuery, error) {
	if err := readsMemory(key); err != nil {
		return nil, err
	}
	rows, err := b.store.MissedQueries(ctx, key.Project, since, limit)
	if err != nil {
		return nil, b.svc.internalErr("missed queries", key, err)
	}
	return rows, nil
}

// Restore writes an old version of a slug again as its newest version. It
// is conditional on the latest version it read, so a write that lands in
// between makes it fail with conflict instead of being overwritten.
func (b *Browser) Restore(ctx context.Context, key memory.Key, slug string, version int) (memory.WriteResult, error) {
	if err := readsMemory(key); err != nil {
		return memory.WriteResult{}, err
	}
	if version < 1 {
		return memory.WriteResult{}, memory.Errorf(memory.CodeInvalid, "version to restore must be 1 or more, got %d", version)
	}
	if err := writes(key, "restore"); err != nil {
		return memory.WriteResult{}, err
	}
	old, err := b.svc.Get(ctx, key, slug, version)
	if err != nil {
		return memory.WriteResult{}, err
	}
	if old.Version.Version == old.LatestVersion {
		return memory.WriteResult{}, memory.Errorf(memory.CodeInvalid, "version %d is already the latest version of %s", version, slug)
	}
	latest := old.LatestVersion
	return b.svc.Remember(ctx, key, RememberInput{
		Slug:            slug,
		Title:           old.Title,
		Content:         old.Content,
		Tags:            old.Tags,
		ExpectedVersion: &latest,
	})
}
