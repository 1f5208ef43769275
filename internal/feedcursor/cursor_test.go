package feedcursor

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func sample() Cursor {
	return Cursor{Minted: 1_780_000_000_123_456_789, Positions: []Position{
		{Workspace: "acme", Identity: "9f1c2b3a4d5e6f70", After: 12345, Stamp: 1_780_000_000_000_000_001},
		{Workspace: "beta-2", Identity: "not hex, kept as it is", Floor: 1_779_999_999_000_000_000},
	}}
}

// A cursor comes back as it went in, in URL-safe characters, short enough
// for a query parameter.
func TestRoundTrip(t *testing.T) {
	for _, c := range []Cursor{{}, {Minted: 1}, sample()} {
		s := Encode(secret, c)
		if strings.ContainsAny(s, "+/=?&#% ") {
			t.Errorf("cursor %q is not URL-safe", s)
		}
		got, err := Decode(secret, s)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip: %+v, want %+v", got, c)
		}
	}
	// Two workspaces of a store (hex identities, big ids and times): the
	// length a typical agent carries.
	two := sample()
	two.Positions[1].Identity = "0011223344556677"
	if s := Encode(secret, two); len(s) > 110 {
		t.Errorf("a cursor of two workspaces is %d characters: %s", len(s), s)
	}
}

// Edited, cut, foreign (another secret), garbage and oversized strings are
// all refused with ErrBad, never a panic.
func TestRefused(t *testing.T) {
	good := Encode(secret, sample())
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	flipped := append([]byte(nil), raw...)
	flipped[5] ^= 1
	// A body in a format this server does not know, signed correctly.
	future := append([]byte{format + 1}, raw[1:len(raw)-macSize]...)
	future = append(future, sign(secret, future)...)
	// A correctly signed body with bytes left over after the positions.
	trailing := append(append([]byte(nil), raw[:len(raw)-macSize]...), 0)
	trailing = append(trailing, sign(secret, trailing)...)
	cases := map[string]string{
		"edited byte":     base64.RawURLEncoding.EncodeToString(flipped),
		"cut short":       good[:len(good)-3],
		"foreign secret":  Encode([]byte("another server's secret, 32 byte"), sample()),
		"not base64":      "hello world!",
		"empty":           "",
		"too long":        strings.Repeat("A", MaxLen+1),
		"unknown format":  base64.RawURLEncoding.EncodeToString(future),
		"trailing bytes":  base64.RawURLEncoding.EncodeToString(trailing),
		"appended":        good + "AA",
		"padding letters": good + "==",
	}
	for name, s := range cases {
		if _, err := Decode(secret, s); !errors.Is(err, ErrBad) {
			t.Errorf("%s: Decode = %v, want ErrBad", name, err)
		}
	}
}

// Garbled bodies behind a valid signature (as only a bug could make) are
// refused without a panic: every prefix of a cursor's body, signed.
func TestGarbledBodies(t *testing.T) {
	raw, _ := base64.RawURLEncoding.DecodeString(Encode(secret, sample()))
	body := raw[:len(raw)-macSize]
	for n := 1; n < len(body); n++ {
		b := append(append([]byte(nil), body[:n]...), sign(secret, body[:n])...)
		if _, err := Decode(secret, base64.RawURLEncoding.EncodeToString(b)); !errors.Is(err, ErrBad) {
			t.Errorf("body cut to %d bytes: Decode = %v, want ErrBad", n, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(secret, sample()))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Decode(secret, s)
		if err == nil && Encode(secret, c) != s {
			t.Errorf("Decode accepted %q, which Encode renders differently", s)
		}
	})
}
