package control

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"munin/internal/memory"
)

// The functions and constants in this file are the store's (internal/store/
// keys.go), so that a token made by either authenticates against the same
// hash. They belong in one place both import; until the lead moves them
// there, the contract test pins that both produce the same format and hash.

// keyIDMax bounds key ids: random in 1..keyIDMax, not a sequence, so a new
// key's id says nothing of other projects' keys (invariant 7).
const keyIDMax = 1<<31 - 1

// keyIDTries bounds the draws after an id collision.
const keyIDTries = 8

// newKeyID draws a key id uniformly from 1..keyIDMax.
func newKeyID() (int64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("generate key id: %w", err)
		}
		if id := int64(binary.BigEndian.Uint64(b[:]) & keyIDMax); id != 0 {
			return id, nil
		}
	}
}

// hashToken is what is stored of a token: hex SHA-256 of the whole token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newToken returns memory.KeyPrefix + 43 characters: base64url of 32 random bytes.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	return memory.KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// lastUsedEvery is how often one node writes last_used_at of one key at
// most: often enough to tell live keys from dead ones, rare enough that
// authentication does not turn every request into an etcd write.
const lastUsedEvery = time.Minute

// keyThrottle remembers when this node last queued last_used_at of each key.
type keyThrottle struct {
	mu   sync.Mutex
	last map[int64]time.Time
}

// due reports whether key id's last_used_at should be written now, and if
// so records it as written.
func (t *keyThrottle) due(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = make(map[int64]time.Time)
	}
	if prev, ok := t.last[id]; ok && now.Sub(prev) < lastUsedEvery {
		return false
	}
	t.last[id] = now
	return true
}
