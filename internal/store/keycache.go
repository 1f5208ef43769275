package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/memory"
)

// keyCacheMax bounds the cache; past it the cache starts over. Only keys
// that exist and are not revoked are kept, so guessing tokens cannot fill it.
const keyCacheMax = 10000

// keyRecheck is how often the cache asks SQLite whether another process
// changed the control database. Asking costs a read transaction (about
// 25 µs, as much as the key lookup it saves), so it is not asked per request.
const keyRecheck = 100 * time.Millisecond

// keyCache keeps the keys found by token hash, so that authenticating a
// request costs a map lookup instead of a control-database query.
//
// Revocation stays prompt. A key revoked through this store (web UI, REST)
// empties the cache at once. A key revoked by another process on the same
// files (`munin key revoke` while the server runs) is refused within
// keyRecheck: the cache reads PRAGMA data_version on a connection of its own,
// which SQLite changes whenever another connection committed, and starts
// over when it changed.
type keyCache struct {
	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn // data_version is per connection: always this one
	// gen counts the times the cache was emptied. A key read from the
	// database is cached only if gen did not move meanwhile, so a read that
	// raced a revocation is never kept.
	gen     uint64
	version int64
	checked time.Time
	keys    map[string]memory.Key
	recheck time.Duration
	misses  atomic.Int64 // database lookups, for tests
}

func openKeyCache(ctx context.Context, path string) (*keyCache, error) {
	db, err := sql.Open("sqlite3", readerDSN(path))
	if err != nil {
		return nil, fmt.Errorf("open key cache: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open key cache: %w", err)
	}
	return &keyCache{db: db, conn: conn, version: -1, keys: make(map[string]memory.Key), recheck: keyRecheck}, nil
}

// get returns the cached key of hash, if any, and the generation that put
// needs. If data_version cannot be read, the cache is emptied and err says
// why; the caller then asks the database and caches nothing.
func (c *keyCache) get(ctx context.Context, hash string) (k memory.Key, ok bool, gen uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= c.recheck {
		var version int64
		if err := c.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
			c.emptyLocked()
			c.checked = time.Time{}
			return memory.Key{}, false, 0, fmt.Errorf("read control data_version: %w", err)
		}
		if version != c.version {
			c.emptyLocked()
			c.version = version
		}
		c.checked = now
	}
	k, ok = c.keys[hash]
	if !ok {
		c.misses.Add(1)
	}
	return k, ok, c.gen, nil
}

// put caches k under hash unless the cache was emptied since get returned gen.
func (c *keyCache) put(hash string, k memory.Key, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.keys) >= keyCacheMax {
		c.emptyLocked()
		return
	}
	c.keys[hash] = k
}

// empty forgets every key; this store calls it after changing a key.
func (c *keyCache) empty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.emptyLocked()
}

func (c *keyCache) emptyLocked() {
	clear(c.keys)
	c.gen++
}

func (c *keyCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cerr := c.conn.Close()
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("close key cache: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("close key cache: %w", cerr)
	}
	return nil
}
