// Package feedcursor encodes the change feed's cursor (docs/changes.md): per
// workspace the file's identity and the last audit row a reader has seen,
// and the time the cursor was made, in a short URL-safe string that the
// server authenticates with an HMAC. A cursor edited by hand, cut short, or
// made by a server with another secret fails Decode; the service answers
// that as invalid, never as an internal error.
//
// It is a package of its own because it is pure encoding: no storage, no
// authorization; the service decides what the positions mean.
package feedcursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"munin/internal/memory"
)

// Position is how far a cursor has read one workspace.
type Position struct {
	Workspace string
	// Identity is the workspace file's identity when the position was read.
	Identity string
	// After is the last audit id seen (0: none) and Stamp that row's time
	// in unix nanoseconds.
	After, Stamp int64
	// Floor (unix nanoseconds), with After 0: rows older than it are not
	// read (the workspace was new to the cursor).
	Floor int64
}

// Cursor is what a feed reader carries from one read to the next.
type Cursor struct {
	// Minted is when the cursor was made (unix nanoseconds): a workspace it
	// has no position for is read from then on. 0: from the beginning.
	Minted    int64
	Positions []Position
}

// Bounds of what Decode reads at all, so that a hostile string costs
// nothing: a cursor holds at most MaxPositions workspaces (a caller holds
// at most memory.MaxCallerKeys keys; the rest are positions of workspaces
// it reached with other keys earlier) and is at most MaxLen characters.
const (
	MaxPositions = 4 * memory.MaxCallerKeys
	MaxLen       = 8192
)

const (
	format  = 1  // the first byte: the layout below
	macSize = 12 // bytes of HMAC-SHA256 kept: 96 bits, not guessable online
)

// ErrBad is the error of every cursor Decode refuses; its text says why.
var ErrBad = errors.New("bad cursor")

// Encode renders c, signed with secret. Layout before base64 (RFC 4648
// URL alphabet, no padding): format byte, uvarint Minted, uvarint count,
// then per position the workspace (uvarint length + bytes) and identity
// (see appendIdentity),
// uvarint After, varint Stamp, varint Floor; then the first macSize bytes
// of HMAC-SHA256(secret, everything before).
func Encode(secret []byte, c Cursor) string {
	b := []byte{format}
	b = binary.AppendUvarint(b, uint64(c.Minted))
	b = binary.AppendUvarint(b, uint64(len(c.Positions)))
	for _, p := range c.Positions {
		b = appendString(b, p.Workspace)
		b = appendIdentity(b, p.Identity)
		b = binary.AppendUvarint(b, uint64(p.After))
		b = binary.AppendVarint(b, p.Stamp)
		b = binary.AppendVarint(b, p.Floor)
	}
	b = append(b, sign(secret, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a cursor made by Encode with the same secret; anything else
// is an error wrapping ErrBad.
func Decode(secret []byte, s string) (Cursor, error) {
	if len(s) > MaxLen {
		return Cursor{}, fmt.Errorf("%w: %d characters, longer than any cursor this server makes", ErrBad, len(s))
	}
	// Go's base64 skips line breaks: a cursor with one inside would decode
	// as the cursor without, one cursor under two names.
	if strings.ContainsAny(s, "\r\n") {
		return Cursor{}, fmt.Errorf("%w: not a cursor of this server (a line break inside)", ErrBad)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 1+macSize {
		return Cursor{}, fmt.Errorf("%w: not a cursor of this server", ErrBad)
	}
	body, mac := raw[:len(raw)-macSize], raw[len(raw)-macSize:]
	// The signature first: nothing of an unsigned string is believed.
	if !hmac.Equal(mac, sign(secret, body)) {
		return Cursor{}, fmt.Errorf("%w: it was not made by this server, or was changed", ErrBad)
	}
	if body[0] != format {
		return Cursor{}, fmt.Errorf("%w: format %d is not known here", ErrBad, body[0])
	}
	r := reader{b: body[1:]}
	c := Cursor{Minted: int64(r.uvarint())}
	n := r.uvarint()
	if n > MaxPositions {
		return Cursor{}, fmt.Errorf("%w: %d workspaces", ErrBad, n)
	}
	for range n {
		p := Position{Workspace: r.str(), Identity: r.identity()}
		p.After, p.Stamp, p.Floor = int64(r.uvarint()), r.varint(), r.varint()
		c.Positions = append(c.Positions, p)
	}
	if r.err != nil || len(r.b) != 0 {
		return Cursor{}, fmt.Errorf("%w: garbled", ErrBad)
	}
	return c, nil
}

func sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)[:macSize]
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendIdentity appends an identity: a store's identities are lowercase
// hex (workspace migration 0007), kept as their bytes, half the length;
// anything else as it is. The uvarint before it is the length times two,
// plus one for hex.
func appendIdentity(b []byte, id string) []byte {
	if raw, err := hex.DecodeString(id); err == nil && hex.EncodeToString(raw) == id {
		b = binary.AppendUvarint(b, uint64(len(raw))<<1|1)
		return append(b, raw...)
	}
	b = binary.AppendUvarint(b, uint64(len(id))<<1)
	return append(b, id...)
}

// reader takes values off a byte slice; the first failure sticks in err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 { return take(r, binary.Uvarint) }

func (r *reader) varint() int64 { return take(r, binary.Varint) }

// take reads one value with decode (binary.Uvarint or binary.Varint).
func take[T uint64 | int64](r *reader, decode func([]byte) (T, int)) T {
	v, n := decode(r.b)
	if n <= 0 {
		r.err, r.b = ErrBad, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string { return r.bytes(r.uvarint()) }

// identity reads what appendIdentity wrote.
func (r *reader) identity() string {
	n := r.uvarint()
	s := r.bytes(n >> 1)
	if n&1 == 1 {
		return hex.EncodeToString([]byte(s))
	}
	return s
}

// bytes takes n bytes as a string.
func (r *reader) bytes(n uint64) string {
	if n > uint64(len(r.b)) {
		r.err, r.b = ErrBad, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
