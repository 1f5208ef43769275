package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Keys are made and checked the same way wherever control data lives (the
// store's control database, or etcd in a cluster), so a token made by one
// authenticates against the hash the other stored.

// KeyIDMax bounds key ids: random in 1..KeyIDMax, not a server-wide sequence, so
// the id a project admin's new key gets says nothing of other projects' keys
// (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects). 31 bits
// stay short enough to type in `munin key revoke ID` and exact as a JSON number
// in every client.
const KeyIDMax = 1<<31 - 1

// KeyIDTries bounds the draws after an id collision. Even with a million
// keys all eight colliding has a chance of (1e6/2^31)^8, about 2e-27.
const KeyIDTries = 8

// NewKeyID draws a key id uniformly from 1..KeyIDMax.
func NewKeyID() (int64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("generate key id: %w", err)
		}
		// 31 random bits are uniform over 0..KeyIDMax; only 0 is drawn again.
		if id := int64(binary.BigEndian.Uint64(b[:]) & KeyIDMax); id != 0 {
			return id, nil
		}
	}
}

// HashToken is what is stored of a token: hex SHA-256 of the whole token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns KeyPrefix + 43 characters: base64url of 32 random bytes.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// LastUsedEvery is how often last_used_at of one key is written at most:
// often enough to tell live keys from dead ones, rare enough that
// authentication does not turn every read request into a write.
const LastUsedEvery = time.Minute

// KeyThrottle remembers when last_used_at of each key was last written.
type KeyThrottle struct {
	mu   sync.Mutex
	last map[int64]time.Time
}

// Due reports whether key id's last_used_at should be written now, and if
// so records it as written.
func (t *KeyThrottle) Due(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = make(map[int64]time.Time)
	}
	if prev, ok := t.last[id]; ok && now.Sub(prev) < LastUsedEvery {
		return false
	}
	t.last[id] = now
	return true
}
