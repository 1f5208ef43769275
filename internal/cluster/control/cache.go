package control

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"munin/internal/memory"
)

// cache holds all control data of the prefix in memory, so that reads cost a
// map lookup. It is fed by three sources, each entry stamped with the etcd
// revision that wrote it: the initial (or reloading) Get, the watch, and this
// node's own writes applied as soon as etcd confirmed them (so a node reads
// its own writes at once). An entry is only ever replaced by one of a newer
// revision, so the sources may arrive in any order.
//
// The cache is bounded by the data itself: it holds exactly what etcd holds
// under <prefix>/ctl/ (keys, projects, budgets, workspaces), never anything a client
// merely asked for, so guessing tokens cannot grow it.
type cache struct {
	paths paths
	log   *slog.Logger

	mu         sync.RWMutex
	workspaces map[string]entry[wsRecord]
	projects   map[memory.ProjectRef]entry[projRecord]
	budgets    map[budgetKey]entry[int]
	keys       map[int64]entry[keyRecord]
	byHash     map[string]int64 // token hash → key id
	rev        int64            // the revision the cache has seen everything up to (watch or load)
}

// budgetKey names one budget of one project.
type budgetKey struct {
	ref   memory.ProjectRef
	field string // budgetWrites or budgetBytes
}

// entry is a cached record and the revision that wrote it.
type entry[T any] struct {
	rec T
	rev int64
}

func newCache(p paths, log *slog.Logger) *cache {
	c := &cache{paths: p, log: log}
	c.resetLocked()
	return c
}

func (c *cache) resetLocked() {
	c.workspaces = make(map[string]entry[wsRecord])
	c.projects = make(map[memory.ProjectRef]entry[projRecord])
	c.budgets = make(map[budgetKey]entry[int])
	c.keys = make(map[int64]entry[keyRecord])
	c.byHash = make(map[string]int64)
}

// put applies one record at its ModRevision, unless a newer one is cached.
// Records that do not decode are logged and skipped: one bad value must not
// stop the cache.
func (c *cache) put(kv *mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(kv)
}

func (c *cache) putLocked(kv *mvccpb.KeyValue) {
	k := string(kv.Key)
	rev := kv.ModRevision
	switch p := c.paths.parse(k); p.kind {
	case dirWS:
		if e, ok := c.workspaces[p.ws]; ok && e.rev > rev {
			return
		}
		r, err := decode[wsRecord](kv.Value)
		if err != nil {
			c.log.Error("skipping control record", "err", errRecord(k, err))
			return
		}
		c.workspaces[p.ws] = entry[wsRecord]{r, rev}
	case dirProj:
		if e, ok := c.projects[p.ref]; ok && e.rev > rev {
			return
		}
		r, err := decode[projRecord](kv.Value)
		if err != nil {
			c.log.Error("skipping control record", "err", errRecord(k, err))
			return
		}
		c.projects[p.ref] = entry[projRecord]{r, rev}
	case dirBudget:
		b := budgetKey{p.ref, p.field}
		if e, ok := c.budgets[b]; ok && e.rev > rev {
			return
		}
		n, err := strconv.Atoi(string(kv.Value))
		if err != nil || n < 0 {
			c.log.Error("skipping control record", "err", errRecord(k, fmt.Errorf("budget %q is not a count", kv.Value)))
			return
		}
		c.budgets[b] = entry[int]{n, rev}
	case dirKey:
		if e, ok := c.keys[p.id]; ok && e.rev > rev {
			return
		}
		r, err := decode[keyRecord](kv.Value)
		if err == nil && (r.ID != p.id || r.Hash == "") {
			err = errors.New("the record's id or hash does not match its key")
		}
		if err != nil {
			c.log.Error("skipping control record", "err", errRecord(k, err))
			return
		}
		if old, ok := c.keys[p.id]; ok && old.rec.Hash != r.Hash {
			delete(c.byHash, old.rec.Hash)
		}
		c.keys[p.id] = entry[keyRecord]{r, rev}
		c.byHash[r.Hash] = p.id
	}
	// keyhash/ entries are derived from key records; nothing else is ours.
}

// remove applies a deletion at revision rev (nothing in Munin deletes control
// data today; an operator's etcdctl del must still not leave a ghost).
func (c *cache) removeLocked(k string, rev int64) {
	switch p := c.paths.parse(k); p.kind {
	case dirWS:
		if e, ok := c.workspaces[p.ws]; ok && e.rev <= rev {
			delete(c.workspaces, p.ws)
		}
	case dirProj:
		if e, ok := c.projects[p.ref]; ok && e.rev <= rev {
			delete(c.projects, p.ref)
		}
	case dirBudget:
		if e, ok := c.budgets[budgetKey{p.ref, p.field}]; ok && e.rev <= rev {
			delete(c.budgets, budgetKey{p.ref, p.field})
		}
	case dirKey:
		if e, ok := c.keys[p.id]; ok && e.rev <= rev {
			delete(c.keys, p.id)
			delete(c.byHash, e.rec.Hash)
		}
	}
}

// events applies a batch of watch events and moves the cache's revision.
func (c *cache) events(evs []*mvccpb.Event, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE {
			c.removeLocked(string(ev.Kv.Key), ev.Kv.ModRevision)
			continue
		}
		c.putLocked(ev.Kv)
	}
	if rev > c.rev {
		c.rev = rev
	}
}

// replace makes the cache the snapshot kvs taken at revision rev. Entries
// newer than the snapshot (this node's writes applied meanwhile) are kept;
// older ones missing from it were deleted and go.
func (c *cache) replace(kvs []*mvccpb.KeyValue, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	oldWS, oldProj, oldBudgets, oldKeys := c.workspaces, c.projects, c.budgets, c.keys
	c.resetLocked()
	for _, kv := range kvs {
		c.putLocked(kv)
	}
	for n, e := range oldWS {
		if e.rev > rev {
			c.workspaces[n] = e
		}
	}
	for r, e := range oldProj {
		if e.rev > rev {
			c.projects[r] = e
		}
	}
	for b, e := range oldBudgets {
		if e.rev > rev {
			c.budgets[b] = e
		}
	}
	for id, e := range oldKeys {
		if e.rev > rev {
			c.keys[id] = e
			c.byHash[e.rec.Hash] = id
		}
	}
	c.rev = rev
}

// revision returns the revision the cache has seen everything up to.
func (c *cache) revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// keyByHash returns the cached key record of a token hash.
func (c *cache) keyByHash(hash string) (entry[keyRecord], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.byHash[hash]
	if !ok {
		return entry[keyRecord]{}, false
	}
	e, ok := c.keys[id]
	return e, ok
}

// key returns the cached key record of an id.
func (c *cache) key(id int64) (entry[keyRecord], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.keys[id]
	return e, ok
}

// project returns the cached project of ref with its budgets.
func (c *cache) project(ref memory.ProjectRef) (memory.ProjectInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.projectLocked(ref)
}

func (c *cache) projectLocked(ref memory.ProjectRef) (memory.ProjectInfo, bool) {
	e, ok := c.projects[ref]
	if !ok {
		return memory.ProjectInfo{}, false
	}
	return memory.ProjectInfo{
		Ref:              ref,
		WriteBudget:      c.budgets[budgetKey{ref, budgetWrites}].rec,
		WriteBudgetBytes: c.budgets[budgetKey{ref, budgetBytes}].rec,
		CreatedAt:        fromNanos(e.rec.CreatedAt),
	}, true
}

// allProjects returns every cached project with its budgets, unordered.
func (c *cache) allProjects() []memory.ProjectInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]memory.ProjectInfo, 0, len(c.projects))
	for ref := range c.projects {
		p, _ := c.projectLocked(ref)
		out = append(out, p)
	}
	return out
}
