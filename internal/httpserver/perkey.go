package httpserver

import (
	"fmt"
	"net/http"
	"sync"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
)

// DefaultMaxInFlightPerKey is how many requests of one key are served at
// once by default. The server-wide limit (DefaultMaxInFlight) keeps the
// server from queueing; this one keeps one key from taking that whole limit,
// and with it the CPU, from every other key: an agent makes one call at a
// time, or a few in parallel.
const DefaultMaxInFlightPerKey = 8

// keySlots counts each key's requests in flight. Keys without requests in
// flight have no entry, so its size follows the keys that are busy now.
type keySlots struct {
	limit int
	mu    sync.Mutex
	busy  map[int64]int
}

func newKeySlots(limit int) *keySlots {
	return &keySlots{limit: limit, busy: map[int64]int{}}
}

// acquire takes a slot of key id, or reports false if all are taken.
func (k *keySlots) acquire(id int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.busy[id] >= k.limit {
		return false
	}
	k.busy[id]++
	return true
}

func (k *keySlots) release(id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.busy[id]--; k.busy[id] <= 0 {
		delete(k.busy, id)
	}
}

// limitPerKey answers a key's requests beyond its limit in flight 429 with
// Retry-After at once, before the body is read. It sits behind requireKey.
// MCP's GET stream is long-lived and idle and has its own cap per key
// (mcpserver's streams per key), so it is not counted. A nil k: no limit.
func limitPerKey(k *keySlots, next http.Handler) http.Handler {
	if k == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := service.KeyFrom(r.Context())
		if err != nil || exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !k.acquire(key.ID) {
			w.Header().Set("Retry-After", "1")
			api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable,
				fmt.Sprintf("key %d (%s) has %d requests in flight, the most one key may; retry after 1 second", key.ID, key.Agent, k.limit))
			return
		}
		defer k.release(key.ID)
		next.ServeHTTP(w, r)
	})
}
