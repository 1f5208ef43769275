package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

	"munin/internal/memory"
)

// keyCacheMax bounds the cache; past it the cache starts over. Only keys
// that exist and are not revoked are kept, so guessing tokens cannot fill it.
const keyCacheMax = 10000

// keyCache keeps the keys found by token hash, so that authenticating a
// request costs a map lookup instead of a control-database query (about 6 %
// of the CPU of a write-heavy load test).
//
// It is exact, not time-based: every lookup first reads PRAGMA data_version
// on a connection of its own. SQLite changes that number whenever another
// connection committed to the file — this server's writer, or another
// process such as `munin key revoke` — and the cache is then emptied. So a
// revoked key is refused on the next request, as it was without the cache.
type keyCache struct {
	mu      sync.Mutex
	db      *sql.DB
	conn    *sql.Conn // data_version is per connection: always this one
	version int64
	keys    map[string]memory.Key

	// misses counts control-database lookups (for tests).
	misses atomic.Int64
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
	return &keyCache{db: db, conn: conn, version: -1, keys: make(map[string]memory.Key)}, nil
}

// get returns the cached key of hash, if any, and the data version the
// answer is valid for; put needs that version. err means the version could
// not be read: the caller then asks the database and caches nothing.
func (c *keyCache) get(ctx context.Context, hash string) (k memory.Key, ok bool, version int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		return memory.Key{}, false, 0, fmt.Errorf("read control data_version: %w", err)
	}
	if version != c.version {
		clear(c.keys)
		c.version = version
	}
	k, ok = c.keys[hash]
	if !ok {
		c.misses.Add(1)
	}
	return k, ok, version, nil
}

// put caches k under hash if the database has not changed since get
// returned version; a key read around a change is simply not cached.
func (c *keyCache) put(hash string, k memory.Key, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		return
	}
	if len(c.keys) >= keyCacheMax {
		clear(c.keys)
	}
	c.keys[hash] = k
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
