package store

import (
	"slices"
	"sync"
	"sync/atomic"

	"munin/internal/memory"
)

// latestCache keeps the latest versions of recently read slugs above
// SQLite, so that a recall's hits and a get of the latest version skip the
// read pool: under constant writes each read transaction starts with a cold
// page cache (about 14 pread per read call, issue 27's profile).
//
// It is one LRU per store, bounded in bytes of content, keyed by the open
// workspace instance (workspace.id), project and slug. A value is only valid
// while that instance's writer is the file's one writer: a closed workspace
// (shutdown, a lease lost in cluster mode, a file replaced on the way to a
// reopen) purges its keys, and a reopened one draws a new id, so a new
// writer starts empty.
//
// Staleness is ruled out with fences instead of locks held across SQL:
// every invalidation (the writer, after a batch's COMMIT and before any of
// its callers is answered) draws the next sequence number and leaves it as
// the key's fence; a reader takes the sequence number (begin) before its
// read statement starts and may fill a key only if no fence of that key is
// newer. A fill whose snapshot may predate a commit of the key is so
// refused, whatever order the reader and the writer finish in. A fence
// evicted from the LRU raises floor, below which no fill is taken.
//
// Values are stored as copies and handed out as copies (tags, supersedes,
// valid_until): nothing a caller may change is shared.
type latestCache struct {
	max int64 // bytes of the values and keys kept (approximate, see versionBytes)

	seq atomic.Uint64 // invalidations so far; written under mu

	mu    sync.Mutex
	bytes int64
	floor uint64 // the newest fence evicted: a fill begun before it is refused
	nodes map[latestKey]*latestNode
	lru   latestNode // sentinel: lru.next is the most recently used

	hits, misses, refused atomic.Int64 // tests and benchmarks
}

// latestKey names a slug of a project in one open workspace instance.
type latestKey struct {
	ws      uint64
	project string
	slug    string
}

// latestNode is a cached value, or only a fence (has unset).
type latestNode struct {
	key        latestKey
	v          memory.Version
	has        bool
	fence      uint64 // the invalidation that last touched the key
	size       int64
	prev, next *latestNode
}

// nodeOverhead approximates a node's bytes besides its strings and slices
// (the node, its map slot, the version's headers).
const nodeOverhead = 256

// newLatestCache returns a cache of at most max bytes, nil (off) for max <= 0.
func newLatestCache(max int64) *latestCache {
	if max <= 0 {
		return nil
	}
	c := &latestCache{max: max, nodes: map[latestKey]*latestNode{}}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// begin returns the sequence number a reader holds while it reads SQLite
// for a later put: taken before the read statement starts.
func (c *latestCache) begin() uint64 { return c.seq.Load() }

// get returns a copy of the cached latest version of k.
func (c *latestCache) get(k latestKey) (memory.Version, bool) {
	c.mu.Lock()
	n := c.nodes[k]
	if n == nil || !n.has {
		c.mu.Unlock()
		c.misses.Add(1)
		return memory.Version{}, false
	}
	c.touch(n)
	v := cloneVersion(n.v)
	c.mu.Unlock()
	c.hits.Add(1)
	return v, true
}

// has says whether k holds a value, without copying it.
func (c *latestCache) has(k latestKey) bool {
	c.mu.Lock()
	n := c.nodes[k]
	ok := n != nil && n.has
	if ok {
		c.touch(n)
	}
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return ok
}

// put fills k with v, read by a reader that called begin (seq) before its
// read started. It is refused if the key was invalidated since: v may be
// older than the committed state.
func (c *latestCache) put(k latestKey, v memory.Version, seq uint64) {
	size := nodeOverhead + int64(len(k.project)+len(k.slug)) + versionBytes(v)
	if size > c.max/8 {
		return // one large value would push out many small ones
	}
	v = cloneVersion(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[k]
	if seq < c.floor || (n != nil && n.fence > seq) {
		c.refused.Add(1)
		return
	}
	n = c.first(k, n)
	c.bytes += size - n.size
	n.v, n.has, n.size = v, true, size
	c.evict()
}

// invalidate drops the values of keys and fences them against fills begun
// before this call. It runs after the COMMIT that changed them and before
// that batch's callers are answered.
func (c *latestCache) invalidate(ws uint64, keys []projectSlug) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.seq.Add(1)
	for _, ps := range keys {
		k := latestKey{ws: ws, project: ps.project, slug: ps.slug}
		n := c.first(k, c.nodes[k])
		size := nodeOverhead + int64(len(k.project)+len(k.slug))
		c.bytes += size - n.size
		n.v, n.has, n.size, n.fence = memory.Version{}, false, size, seq
	}
	c.evict()
}

// purge forgets every key of workspace instance ws and refuses every fill
// begun before: its writer closed, or its changes could not be told apart.
func (c *latestCache) purge(ws uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.floor = c.seq.Add(1)
	for k, n := range c.nodes {
		if k.ws == ws {
			c.drop(n)
		}
	}
}

// first returns k's node n, or a new one if n is nil, as the most recently
// used. Runs under mu.
func (c *latestCache) first(k latestKey, n *latestNode) *latestNode {
	if n == nil {
		n = &latestNode{key: k}
		c.nodes[k] = n
		c.link(n)
	} else {
		c.touch(n)
	}
	return n
}

// evict drops least recently used nodes until the bytes fit. Runs under mu.
func (c *latestCache) evict() {
	for c.bytes > c.max && c.lru.prev != &c.lru {
		n := c.lru.prev
		c.floor = max(c.floor, n.fence)
		c.drop(n)
	}
}

// drop removes n. Runs under mu.
func (c *latestCache) drop(n *latestNode) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
	delete(c.nodes, n.key)
	c.bytes -= n.size
}

// link puts a new node first. Runs under mu.
func (c *latestCache) link(n *latestNode) {
	n.prev, n.next = &c.lru, c.lru.next
	c.lru.next.prev = n
	c.lru.next = n
}

// touch moves n first. Runs under mu.
func (c *latestCache) touch(n *latestNode) {
	n.prev.next, n.next.prev = n.next, n.prev
	c.link(n)
}

// size returns the bytes and nodes held (tests).
func (c *latestCache) size() (bytes int64, nodes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, len(c.nodes)
}

// versionBytes approximates what v holds beyond its fixed fields.
func versionBytes(v memory.Version) int64 {
	n := len(v.Slug) + len(v.Title) + len(v.Content) + len(v.Agent) + len(v.SupersededBy)
	for _, t := range v.Tags {
		n += len(t) + 16
	}
	for _, s := range v.Supersedes {
		n += len(s) + 16
	}
	return int64(n)
}

// cloneVersion copies the parts of v a holder could change in place.
// Strings are immutable and shared.
func cloneVersion(v memory.Version) memory.Version {
	if v.Tags != nil {
		v.Tags = slices.Clone(v.Tags)
	}
	if v.Supersedes != nil {
		v.Supersedes = slices.Clone(v.Supersedes)
	}
	if v.ValidUntil != nil {
		t := *v.ValidUntil
		v.ValidUntil = &t
	}
	return v
}

// projectSlug is a slug of a project a batch touched.
type projectSlug struct{ project, slug string }
