// Package changehub fans the change feed out to many watchers: one feed read
// per workspace per commit batch serves every watcher of that workspace, so
// a write to a workspace a thousand MCP sessions subscribe to costs one read
// of its audit log, not a thousand.
//
// A workspace is read only while somebody watches one of its projects. Its
// reader goroutine holds one position in the workspace's feed (the audit
// log, docs/changes.md), starts at the feed's end when the first watcher
// comes, and reads on after each commit signal (and, in a cluster, on a
// poll tick: other nodes' commits do not signal here). The rows it reads
// are handed to the watchers of their project; a watcher's function must
// not block, so a slow watcher never slows a writer, the reader or
// another watcher — what it does when it cannot keep up is its own
// business (the MCP subscriptions collapse what they missed into a resync
// marker). The hub decides nothing about who may see what: its callers
// (the service) check keys before they watch and filter what they pass on.
package changehub

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/memory"
)

// Source is the feed the hub reads: the service's store (a cluster's router
// sends each read to the workspace's owner).
type Source interface {
	// FeedRead reads a workspace's audit rows of some projects after a
	// position (store.Store.FeedRead).
	FeedRead(ctx context.Context, workspace string, q memory.FeedQuery) (memory.FeedPage, error)
	// OnCommit calls wake after each write batch committed on this node to
	// one of the workspaces, until stop; wake must not block.
	OnCommit(workspaces []string, wake func()) (stop func())
}

// Defaults of Options.
const (
	// DefaultRetry is how long a reader waits after a failed read (a
	// failover in a cluster answers unavailable for a few seconds) before
	// it reads again from the same position.
	DefaultRetry = time.Second
	// DefaultReadTimeout bounds one feed read.
	DefaultReadTimeout = 10 * time.Second
)

// Options configure a Hub; a zero field takes its default.
type Options struct {
	// Poll is how often a watched workspace is read without a commit
	// signal; 0: never (a single server, where every commit signals).
	Poll time.Duration
	// Retry is the wait after a failed read.
	Retry time.Duration
	// ReadTimeout bounds one feed read.
	ReadTimeout time.Duration
	// PageSize is the rows one read asks for (at most memory.MaxChangesLimit).
	PageSize int
	Logger   *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.PageSize <= 0 || o.PageSize > memory.MaxChangesLimit {
		o.PageSize = memory.MaxChangesLimit
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Event is what a watcher hears: the rows of its project that one read
// found, in commit order, or Resync: rows may have been missed because the
// workspace's file was replaced (its feed position expired), so whatever
// the watcher derives from the feed must be read again.
type Event struct {
	Rows   []memory.FeedRow // shared by all watchers of the project: read only
	Resync bool
	memo   *memo
}

// memo holds what one watcher derived from an event's rows for the others
// of the project: a thousand watchers convert the rows once.
type memo map[any]any

// Derived returns what derive makes of the event under key, made by the
// first watcher that asks and shared by the others (all run on the hub's
// goroutine, one after another); it must be treated as read only.
func (ev Event) Derived(key any, derive func() any) any {
	if ev.memo == nil {
		return derive()
	}
	v, ok := (*ev.memo)[key]
	if !ok {
		v = derive()
		(*ev.memo)[key] = v
	}
	return v
}

// Hub serves the watchers of one source.
type Hub struct {
	src  Source
	opts Options

	mu     sync.Mutex
	spaces map[string]*space
	count  atomic.Int64
}

// New returns a hub over src.
func New(src Source, opts Options) *Hub {
	return &Hub{src: src, opts: opts.withDefaults(), spaces: map[string]*space{}}
}

// watcher is one Watch. mu orders its calls against stop: stop takes it, so
// no call is under way once stop returned, and none comes after.
type watcher struct {
	mu      sync.Mutex
	stopped bool
	fn      func(Event)
}

func (w *watcher) call(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.fn(ev)
	}
}

// space is one watched workspace: its watchers by project and its reader.
type space struct {
	name     string
	watchers map[string]map[*watcher]struct{} // by project
	wake     chan struct{}                    // one waiting signal at most
	done     chan struct{}                    // closed when the last watcher left
	ready    chan struct{}                    // closed once the start position was read
}

// Watch calls fn with the rows of project (in workspace ws) committed after
// Watch returned, one call per read that found any, until stop. fn runs on
// the workspace's reader goroutine: it must not block and must not call
// stop. After stop returned, fn is not called again.
func (h *Hub) Watch(ws, project string, fn func(Event)) (stop func()) {
	w := &watcher{fn: fn}
	h.mu.Lock()
	sp := h.spaces[ws]
	if sp == nil {
		sp = &space{name: ws, watchers: map[string]map[*watcher]struct{}{},
			wake: make(chan struct{}, 1), done: make(chan struct{}), ready: make(chan struct{})}
		h.spaces[ws] = sp
		go h.read(sp)
	}
	if sp.watchers[project] == nil {
		sp.watchers[project] = map[*watcher]struct{}{}
	}
	sp.watchers[project][w] = struct{}{}
	h.mu.Unlock()
	h.count.Add(1)
	// A watcher of a new workspace hears what is committed after Watch
	// returns: the reader's start position is read first.
	<-sp.ready
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			h.count.Add(-1)
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(sp.watchers[project], w)
			if len(sp.watchers[project]) == 0 {
				delete(sp.watchers, project)
			}
			if len(sp.watchers) == 0 && h.spaces[ws] == sp {
				delete(h.spaces, ws)
				close(sp.done)
			}
		})
	}
}

// Watchers is the number of watches open.
func (h *Hub) Watchers() int { return int(h.count.Load()) }

// Readers is the number of workspaces being read (one goroutine each).
func (h *Hub) Readers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.spaces)
}

// projects are the watched projects of sp, sorted.
func (h *Hub) projects(sp *space) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(sp.watchers))
}

// watchersOf are the watchers of a project of sp now.
func (h *Hub) watchersOf(sp *space, project string) []*watcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Collect(maps.Keys(sp.watchers[project]))
}

// everyWatcher are all watchers of sp now.
func (h *Hub) everyWatcher(sp *space) []*watcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*watcher
	for _, ws := range sp.watchers {
		for w := range ws {
			out = append(out, w)
		}
	}
	return out
}
