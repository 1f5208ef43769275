package service

import (
	"context"
	"time"

	"munin/internal/memory"
)

// Store is what the service needs of storage; *store.Store implements it.
// Every method returns *memory.Error for a client's mistake (not_found,
// conflict, invalid, unauthorized) and wraps anything else.
//
// It has two halves: the control data every node of a cluster shares
// (projects, keys, budgets) and the data of workspace files, which lives on
// the node that owns the workspace. A single server keeps both in one store;
// a cluster node combines etcd's control data with a data half that
// forwards to the owner (see Split).
type Store interface {
	ControlStore
	DataStore
}

// Split is a Store made of two halves.
type Split struct {
	ControlStore
	DataStore
}

// ControlStore is the control half of Store: projects, keys and budgets.
type ControlStore interface {
	// EnsureProject creates the workspace (and its file) and the project if new.
	EnsureProject(ctx context.Context, ref memory.ProjectRef) (created bool, err error)
	// Project returns one project, or CodeNotFound.
	Project(ctx context.Context, ref memory.ProjectRef) (memory.ProjectInfo, error)
	// ListProjects returns every project of every workspace, ordered by workspace, project.
	ListProjects(ctx context.Context) ([]memory.ProjectInfo, error)
	// SetWriteBudget sets a project's writes per hour (0: the server default).
	SetWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error
	// SetWriteBudgetBytes sets a project's content bytes per hour (0: the server default).
	SetWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error

	// CreateKey makes a new key for an agent in an existing project and returns
	// the token (shown once; only its SHA-256 is stored).
	CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (token string, key memory.Key, err error)
	// CreateServerAdminKey makes a server-admin key (no project) and returns the token.
	CreateServerAdminKey(ctx context.Context, agent string) (token string, key memory.Key, err error)
	// KeyByToken finds the live key of a token, or CodeUnauthorized.
	KeyByToken(ctx context.Context, token string) (memory.Key, error)
	// ListKeys returns all keys, revoked ones included, oldest first.
	ListKeys(ctx context.Context) ([]memory.Key, error)
	// ListProjectKeys returns the keys of one project, revoked ones included, oldest first.
	ListProjectKeys(ctx context.Context, ref memory.ProjectRef) ([]memory.Key, error)
	// KeyCounts counts a project's keys created at or after since (revoked
	// ones included) and its live keys, for the key limits.
	KeyCounts(ctx context.Context, ref memory.ProjectRef, since time.Time) (memory.KeyCounts, error)
	// RevokeKey revokes a key by id (CodeNotFound if there is none).
	RevokeKey(ctx context.Context, id int64) error
	// RevokeProjectKey revokes a key by id if it belongs to ref (CodeNotFound otherwise).
	RevokeProjectKey(ctx context.Context, ref memory.ProjectRef, id int64) error
	// KeyByID returns a key by id, revoked or not.
	KeyByID(ctx context.Context, id int64) (memory.Key, error)
}

// DataStore is the data half of Store: what lives in a workspace's file.
type DataStore interface {
	ReviewStore
	AsOfStore
	ChangesStore

	// Append writes the next version of w.Slug and its audit row in one
	// transaction (group-committed with other waiting writes of the workspace).
	Append(ctx context.Context, ref memory.ProjectRef, w memory.Write) (memory.WriteResult, error)
	// Replay returns the first result of an idempotency key on a slug within
	// its 24 hours, if any (Replayed set), without writing.
	Replay(ctx context.Context, ref memory.ProjectRef, slug, key string) (memory.WriteResult, bool, error)
	// Get returns a version (0: the latest, tombstones included) and the slug's latest version number.
	Get(ctx context.Context, ref memory.ProjectRef, slug string, version int) (v memory.Version, latest int, err error)
	// History lists a slug's versions, newest first.
	History(ctx context.Context, ref memory.ProjectRef, slug string, limit int) ([]memory.VersionInfo, error)
	// List pages through live entries ordered by slug.
	List(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery) (entries []memory.EntrySummary, nextCursor string, err error)
	// WrittenSince counts a project's audit rows at or after since and the
	// content bytes they wrote (for the write budget).
	WrittenSince(ctx context.Context, ref memory.ProjectRef, since time.Time) (writes, bytes int, err error)
	// AppendSearchLog writes search-log rows in as few transactions as possible.
	AppendSearchLog(ctx context.Context, rows []memory.SearchLogRow) error
	// PruneSearchLog deletes a project's search-log rows older than before
	// (zero: none by age) and beyond its keep newest (≤ 0: none by count), in
	// bounded deletes through the writer, and returns how many it deleted.
	PruneSearchLog(ctx context.Context, ref memory.ProjectRef, before time.Time, keep int) (int, error)

	// EntryStats counts live entries and returns the time of the last write.
	EntryStats(ctx context.Context, ref memory.ProjectRef) (live int, lastWrite time.Time, err error)
	// ListEntries returns a page of live (or forgotten) entries in an
	// order, and the total.
	ListEntries(ctx context.Context, ref memory.ProjectRef, f memory.EntryFilter) ([]memory.EntrySummary, int, error)
	// AuditRows returns filtered audit rows, newest first.
	AuditRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.AuditRow, error)
	// SearchRows returns filtered search-log rows, newest first.
	SearchRows(ctx context.Context, ref memory.ProjectRef, f memory.LogFilter) ([]memory.SearchRow, error)
	// MissedQueries returns queries without hits since a time, most asked first.
	MissedQueries(ctx context.Context, ref memory.ProjectRef, since time.Time, limit int) ([]memory.MissedQuery, error)
}

// UsageReader tells what a project used of its write budget this hour.
// *Budgeted answers it; in a cluster the router asks the workspace's owner.
type UsageReader interface {
	BudgetUsage(ctx context.Context, ref memory.ProjectRef) (BudgetUsage, error)
}

// BudgetUsage is a project's writes and content bytes this hour against its
// limits.
type BudgetUsage struct {
	Writes, Bytes         int
	WriteLimit, ByteLimit int
}

// Index is what the service needs of search; *search.Registry implements it.
type Index interface {
	Similarity

	// Queue makes the index agree with the database for one slug: a batch
	// rereads the latest version and updates or removes the document. Every
	// Search that starts after Queue returned sees that state (read-your-writes).
	Queue(ref memory.ProjectRef, slug string) error
	// SearchProjects runs one recall over the live entries of several
	// projects: one list ranked with statistics of all of them, each hit
	// naming its project, q.Limit applied to the list.
	SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error)
}
