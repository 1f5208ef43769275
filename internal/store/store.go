// Package store keeps Munin's data in SQLite: a control database
// (_control.db: workspaces, projects, keys, settings) and one file per
// workspace (<workspace>.db: entries and their versions, audit log, search
// log, idempotency keys of all its projects).
//
// Every file has exactly one writer connection and a separate read-only pool
// (WAL), so reads never wait for writes and SQLite never sees two writers.
// Writes to a workspace file go through one goroutine that group-commits
// whatever is queued: one transaction per batch; a failing write is rolled
// back alone (savepoints), the others commit.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/memory"
)

// controlFile is the name of the control database. The leading underscore
// keeps it out of the workspace namespace (^[a-z0-9][a-z0-9-]{0,62}$).
const controlFile = "_control.db"

// CheckDataDir tells whether dir holds Munin data, so that commands that only
// read can refuse a mistyped --data instead of creating an empty directory.
func CheckDataDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, controlFile)); err != nil {
		return fmt.Errorf("%s is not a Munin data directory (no %s): %w", dir, controlFile, err)
	}
	return nil
}

// DefaultSynchronous is the synchronous mode of a zero Options.
const DefaultSynchronous = "FULL"

// DefaultLatestCacheBytes is the size the server gives the cache of latest
// versions (Options.LatestCacheBytes): about 30,000 entries of 1 KB, the
// recall hits of many projects, a small part of the memory a thousand open
// projects take.
const DefaultLatestCacheBytes = 32 << 20

// Options configures a Store. The zero value is usable.
type Options struct {
	// Synchronous is SQLite's synchronous pragma: "FULL" (default: fsync on
	// every commit, so an acknowledged write also survives a power loss or an
	// OS crash) or "NORMAL" (with WAL a process crash loses nothing, a power
	// loss can lose the last commits but never corrupts). Group commit shares
	// one fsync among all waiting writes, so on the full write path FULL costs
	// about as much as NORMAL (measured in AUSBAUSTUFEN.md, stage 2).
	Synchronous string
	// Logger receives internal failures; nil discards them.
	Logger *slog.Logger
	// ReadConns is the size of each file's read pool (default: max(4, NumCPU)).
	ReadConns int
	// MaxBatch is the most writes one group-commit transaction takes (default 128).
	MaxBatch int
	// Observer, when set, is told the size and duration of every committed
	// writer batch and of every replica confirmation (the metrics; see
	// Observer).
	Observer Observer
	// Cluster, when set, makes the store one node's part of a cluster: it
	// is called around every workspace's open, batch and close and tells
	// which projects exist (see Cluster). Nil is a single server.
	Cluster Cluster
	// AckGather (cluster mode) is how long Cluster.AfterCommit may wait for
	// more committed batches so that one call covers more writes: only
	// while the batches waiting hold fewer writes than the previous call
	// covered (a lone writer never waits). A replication costs the
	// replicator a few ms of CPU whatever its size (measured in
	// AUSBAUSTUFEN.md, stage 8), so under load fewer, larger ones leave
	// more CPU for the requests.
	AckGather time.Duration
	// LatestCacheBytes bounds the cache of latest versions read by Get,
	// Latest and LatestMany (latestcache.go), in bytes of content; 0 (the
	// zero value) turns it off.
	LatestCacheBytes int64
}

// Store is Munin's storage. It is safe for concurrent use.
type Store struct {
	dir     string
	opts    Options
	log     *slog.Logger
	control *pool

	mu         sync.Mutex // guards workspaces, pending and closed
	workspaces map[string]*workspace
	pending    map[string]chan struct{} // workspaces being opened or closed; each channel closes when that is done
	closed     bool

	// projects caches refs known to exist. Projects are never deleted, so
	// a positive answer never goes stale and saves a control-DB read per call.
	projects sync.Map // memory.ProjectRef -> struct{}

	keyUse   memory.KeyThrottle
	keyCache *keyCache

	// latest caches latest versions above SQLite (latestcache.go), nil when
	// Options.LatestCacheBytes is 0; workspaceIDs numbers open workspaces.
	latest       *latestCache
	workspaceIDs atomic.Uint64

	batches atomic.Int64
	writes  atomic.Int64

	// feedSecret caches the change feed's cursor secret once read: it is
	// drawn once and never changes (feed_secret.go).
	feedSecret atomic.Pointer[[]byte]

	// hookBeforeCommit, if set (tests only), runs in the writer goroutine after
	// a batch was applied and before its COMMIT.
	hookBeforeCommit func()
	// hookKeyID, if set (tests only), replaces each drawn key id.
	hookKeyID func(drawn int64) int64
}

// errClosed is returned for calls after Close.
var errClosed = memory.Errorf(memory.CodeUnavailable, "store is closed")

// Open opens (creating if needed) the data directory dir and its control
// database. Workspace files are opened on first use.
func Open(dir string, opts Options) (*Store, error) {
	switch strings.ToUpper(opts.Synchronous) {
	case "":
		opts.Synchronous = DefaultSynchronous
	case "NORMAL", "FULL":
		opts.Synchronous = strings.ToUpper(opts.Synchronous)
	default:
		return nil, fmt.Errorf("open store: synchronous %q must be NORMAL or FULL", opts.Synchronous)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(4, runtime.NumCPU())
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	ctlOpts := opts
	ctlOpts.Cluster = nil // only workspace files are owned and replicated
	ctl, err := openPool(context.Background(), filepath.Join(dir, controlFile), schemaControl, ctlOpts)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	kc, err := openKeyCache(context.Background(), ctl.path)
	if err != nil {
		_ = ctl.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	return &Store{
		dir:        dir,
		opts:       opts,
		log:        log,
		control:    ctl,
		keyCache:   kc,
		latest:     newLatestCache(opts.LatestCacheBytes),
		workspaces: make(map[string]*workspace),
		pending:    make(map[string]chan struct{}),
	}, nil
}

// Close stops accepting writes, lets every workspace writer commit what is
// already queued, and closes all databases.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	wss := make([]*workspace, 0, len(s.workspaces))
	for _, ws := range s.workspaces {
		wss = append(wss, ws)
	}
	pending := make([]chan struct{}, 0, len(s.pending))
	for _, done := range s.pending {
		pending = append(pending, done)
	}
	s.mu.Unlock()
	for _, done := range pending {
		<-done // an open or close in flight finishes first
	}

	var errs []error
	for _, ws := range wss {
		if err := ws.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.keyCache.close(); err != nil {
		errs = append(errs, err)
	}
	if err := s.control.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CloseWorkspace closes one open workspace: its writer commits what is
// queued, writes that arrive later fail with unavailable, and its
// connections close. The next call that needs the workspace opens it again.
// Closing a workspace that is not open does nothing. Cluster mode closes a
// workspace whose ownership moves to another node.
func (s *Store) CloseWorkspace(name string) error {
	s.mu.Lock()
	ws, ok := s.workspaces[name]
	if !ok || s.closed {
		s.mu.Unlock()
		return nil
	}
	// Until the file is closed, an opener waits (invariant 1
	// (docs/architecture.md#invariant-1-one-writer-per-workspace): never two
	// writer connections on one file, not even for a moment).
	delete(s.workspaces, name)
	done := make(chan struct{})
	s.pending[name] = done
	s.mu.Unlock()

	err := ws.close()
	s.mu.Lock()
	delete(s.pending, name)
	s.mu.Unlock()
	close(done)
	return err
}

// WorkspaceFile returns the path of a workspace's file. It validates the
// name first and returns "" for an invalid one, so a caller can never build
// a path out of "../x".
func (s *Store) WorkspaceFile(name string) string {
	if memory.ValidateName("workspace", name) != nil {
		return ""
	}
	return filepath.Join(s.dir, name+".db")
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// PoolStats describes the connections of one workspace file.
type PoolStats struct {
	WriterOpen    int // open writer connections (at most 1)
	WriterMaxOpen int // the writer's limit (1)
	ReaderOpen    int // open read-only connections
}

// Stats is a snapshot of the store's counters.
type Stats struct {
	// Workspaces maps each open workspace file to its pool state.
	Workspaces map[string]PoolStats
	// Batches counts committed group-commit transactions.
	Batches int64
	// Writes counts the operations committed in them (failed ones excluded).
	Writes int64
	// Queued is the number of writes waiting for their workspace's writer.
	Queued int
}

// Stats returns a snapshot of pool states and group-commit counters.
func (s *Store) Stats() Stats {
	st := Stats{Workspaces: map[string]PoolStats{}, Batches: s.batches.Load(), Writes: s.writes.Load()}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, ws := range s.workspaces {
		w, r := ws.pool.writer.Stats(), ws.pool.reader.Stats()
		st.Workspaces[name] = PoolStats{WriterOpen: w.OpenConnections, WriterMaxOpen: w.MaxOpenConnections, ReaderOpen: r.OpenConnections}
		st.Queued += len(ws.queue)
	}
	return st
}

// workspace returns the open handle of a workspace, opening its file on first
// use. With create unset, a workspace without a control row is not_found and
// no file is created.
func (s *Store) workspace(ctx context.Context, name string, create bool) (*workspace, error) {
	if err := memory.ValidateName("workspace", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return nil, errClosed
		}
		if ws, ok := s.workspaces[name]; ok {
			s.mu.Unlock()
			return ws, nil
		}
		done, busy := s.pending[name]
		if !busy {
			break
		}
		// Being opened or closed by another call: wait for that to end.
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
	}
	// Claimed: until done closes, every other caller waits above, so two callers
	// never open two writers on one file (invariant 1,
	// docs/architecture.md#invariant-1-one-writer-per-workspace), and opening one
	// workspace (a restore, in cluster mode) holds up no other.
	done := make(chan struct{})
	s.pending[name] = done
	s.mu.Unlock()
	ws, err := s.openWorkspace(ctx, name, create)
	s.mu.Lock()
	delete(s.pending, name)
	close(done)
	if err == nil && s.closed {
		err = errors.Join(errClosed, ws.close())
	}
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.workspaces[name] = ws
	s.mu.Unlock()
	return ws, nil
}

// openWorkspace opens a workspace's file and starts its writer. With create
// unset, a workspace without a control row is not_found and no file is
// created (unless Options.Cluster stands in for the control database: then
// its caller has checked the project).
func (s *Store) openWorkspace(ctx context.Context, name string, create bool) (*workspace, error) {
	cl := s.opts.Cluster
	if !create && cl == nil {
		var one int
		err := s.control.reader.QueryRowContext(ctx, "SELECT 1 FROM workspaces WHERE name = ?", name).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, memory.Errorf(memory.CodeNotFound, "workspace %q not found", name)
		}
		if err != nil {
			return nil, fmt.Errorf("look up workspace %s: %w", name, err)
		}
	}
	if cl != nil {
		if err := cl.BeforeOpen(ctx, name); err != nil {
			return nil, err
		}
	}
	p, err := openPool(ctx, s.WorkspaceFile(name), schemaWorkspace, s.opts)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", name, err)
	}
	ws := newWorkspace(s, name, p)
	if cl != nil {
		if err := cl.AfterOpen(ctx, name); err != nil {
			return nil, errors.Join(err, ws.close())
		}
	}
	return ws, nil
}

// requireProject validates ref, checks that the project exists and returns
// its workspace handle.
func (s *Store) requireProject(ctx context.Context, ref memory.ProjectRef) (*workspace, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if _, ok := s.projects.Load(ref); !ok && s.opts.Cluster != nil {
		if err := s.opts.Cluster.ProjectExists(ctx, ref); err != nil {
			return nil, err
		}
	} else if !ok {
		var one int
		err := s.control.reader.QueryRowContext(ctx,
			"SELECT 1 FROM projects WHERE workspace = ? AND name = ?", ref.Workspace, ref.Project).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
		}
		if err != nil {
			return nil, fmt.Errorf("look up project %s: %w", ref, err)
		}
		s.projects.Store(ref, struct{}{})
	}
	return s.workspace(ctx, ref.Workspace, false)
}
