package web

import (
	"container/list"
	"context"
	"crypto/sha256"
	"strconv"
	"sync"

	"munin/internal/memory"
)

// renderCacheBytes bounds the memory of the render cache: some hundred
// rendered entries or diffs of the largest kind, thousands of usual ones.
const renderCacheBytes = 32 << 20

// renderCache keeps rendered entries and diffs of versions, which never
// change, so that reading a page again costs no Markdown or diff work. A
// key names the project, slug and version(s) and the SHA-256 of the content
// rendered: a project deleted and made again, or a restored backup, can
// bring back a version number with other content, and the hash keeps the
// old render from being served for it. The cache never authorizes: a page
// loads the version through the service (which checks the caller) before
// it looks here, and the key's project keeps one project's renders from
// ever answering another's request, even for the same text.
//
// It is a least-recently-used list bounded in bytes (the sizes are
// estimates of what an item holds); an item over an eighth of the bound is
// not kept.
type renderCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // front: most recently used; values are *cacheItem
	items map[string]*list.Element
	// flights are the renders being computed: a request for one of them
	// waits for it instead of computing it again (and taking another of
	// its key's places for heavy work).
	flights map[string]chan struct{}
	// misses counts the renders computed because the cache did not have
	// them (tests count renders with it).
	misses int
}

type cacheItem struct {
	key  string
	val  any
	size int
}

func newRenderCache(maxBytes int) *renderCache {
	return &renderCache{max: maxBytes, order: list.New(), items: map[string]*list.Element{}, flights: map[string]chan struct{}{}}
}

// maxFlightWaits bounds how often a request waits for others' renders of
// the same key that ended without one (refused, say) before it renders
// itself.
const maxFlightWaits = 2

// get returns the item under key, if any, and marks it recently used.
// Otherwise the caller is to compute it and must call done(val, size)
// (size < 0: nothing to keep). While another request computes key, get
// waits for it, as long as ctx lasts.
func (c *renderCache) get(ctx context.Context, key string) (val any, hit bool, done func(val any, size int), err error) {
	for waits := 0; ; waits++ {
		c.mu.Lock()
		if e, ok := c.items[key]; ok {
			c.order.MoveToFront(e)
			c.mu.Unlock()
			return e.Value.(*cacheItem).val, true, nil, nil
		}
		flight, busy := c.flights[key]
		if !busy || waits >= maxFlightWaits {
			break // c.mu stays locked
		}
		c.mu.Unlock()
		select {
		case <-flight:
		case <-ctx.Done():
			return nil, false, nil, memory.Errorf(memory.CodeUnavailable, "the page was cancelled while waiting for its render")
		}
	}
	defer c.mu.Unlock()
	c.misses++
	flight, busy := c.flights[key]
	if busy {
		// Out of waits: compute beside the other, keep whichever ends last.
		return nil, false, func(val any, size int) { c.put(key, val, size) }, nil
	}
	flight = make(chan struct{})
	c.flights[key] = flight
	return nil, false, func(val any, size int) {
		if size >= 0 {
			c.put(key, val, size)
		}
		c.mu.Lock()
		delete(c.flights, key)
		c.mu.Unlock()
		close(flight)
	}, nil
}

// put keeps val (of about size bytes) under key, dropping the least
// recently used items beyond the bound.
func (c *renderCache) put(key string, val any, size int) {
	if size < 0 {
		return
	}
	size += len(key) + 64
	if size > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.size -= e.Value.(*cacheItem).size
		c.order.Remove(e)
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, val: val, size: size})
	c.size += size
	for c.size > c.max {
		last := c.order.Back()
		it := last.Value.(*cacheItem)
		c.order.Remove(last)
		delete(c.items, it.key)
		c.size -= it.size
	}
}

// stats are the cache's items, bytes and misses (tests).
func (c *renderCache) stats() (items, bytes, misses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.size, c.misses
}

// versionKey names one version's content for the cache; kind tells an
// entry's render from a diff's side.
func versionKey(kind string, ref memory.ProjectRef, v memory.Version) string {
	sum := sha256.Sum256([]byte(v.Content))
	return kind + "\x00" + ref.String() + "\x00" + v.Slug + "\x00" + strconv.Itoa(v.Version) + "\x00" + string(sum[:])
}

// entrySize estimates what a rendered entry holds.
func entrySize(r rendered) int { return len(r.HTML) + len(r.Plain) }

// diffSize estimates what a diff holds.
func diffSize(d diffTable) int { return len(d.HTML) }
