package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"

	"munin/internal/memory"
)

// cursors seals the row id an "Older" link of the audit and search logs pages on
// from. Rows are numbered per workspace file, across its projects: an id in clear
// would tell a project's reader how many rows the other projects of its workspace
// wrote, and that they exist (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects). The key
// lives in memory only, so a restart makes old links invalid; the page then says
// to start from the newest rows.
type cursors struct {
	aead cipher.AEAD
}

func newCursors() (*cursors, error) {
	var key [32]byte
	_, _ = rand.Read(key[:]) // never fails (it panics rather than return weak bytes)
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &cursors{aead: aead}, nil
}

// seal returns the cursor for row id; 0 (no older page) is "".
func (c *cursors) seal(id int64) string {
	if id == 0 {
		return ""
	}
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+8+c.aead.Overhead())
	_, _ = rand.Read(nonce)
	out := c.aead.Seal(nonce, nonce, binary.BigEndian.AppendUint64(nil, uint64(id)), nil)
	return base64.RawURLEncoding.EncodeToString(out)
}

// open returns the row id of a cursor seal made; "" is 0 (the newest rows).
func (c *cursors) open(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	n := c.aead.NonceSize()
	if err == nil && len(b) > n {
		var plain []byte
		if plain, err = c.aead.Open(nil, b[:n], b[n:], nil); err == nil && len(plain) == 8 {
			if id := int64(binary.BigEndian.Uint64(plain)); id > 0 {
				return id, nil
			}
		}
	}
	return 0, memory.Errorf(memory.CodeInvalid, "before is not a link of this page (or the server restarted since); open the log again to start from the newest rows")
}
