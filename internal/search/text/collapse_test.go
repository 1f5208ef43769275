package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// collapsedRuneByRune is writeCollapsed as it was before it wrote runs at
// once: the reference its output must equal.
func collapsedRuneByRune(b *strings.Builder, s string) {
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			writeSpace(b)
		}
		space = false
		b.WriteRune(r)
	}
	if space {
		writeSpace(b)
	}
}

// TestWriteCollapsedAsRuneByRune pins writeCollapsed to the rune-by-rune
// reference on random texts of letters, every kind of whitespace (ASCII,
// NEL, no-break and ideographic spaces), multi-byte runes and bytes that are
// not UTF-8, written after a prefix as render writes pieces one after
// another.
func TestWriteCollapsedAsRuneByRune(t *testing.T) {
	alphabet := []string{"a", "Z", "ä", "ß", "€", "日", " ", "\t", "\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u3000", "\u2028", "\xff", "\xc3", "«", "…", "."}
	rng := rand.New(rand.NewPCG(27, 1))
	for n := range 20000 {
		var s strings.Builder
		for range rng.IntN(12) {
			s.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		prefix := []string{"", "x", "x "}[n%3]
		var got, want strings.Builder
		got.WriteString(prefix)
		want.WriteString(prefix)
		writeCollapsed(&got, s.String())
		collapsedRuneByRune(&want, s.String())
		if got.String() != want.String() {
			t.Fatalf("writeCollapsed(%q) after %q = %q, rune by rune %q", s.String(), prefix, got.String(), want.String())
		}
	}
}

// BenchmarkWriteCollapsed is render's writing of a snippet's 160 runes of
// text: rune by rune as before, and in runs.
func BenchmarkWriteCollapsed(b *testing.B) {
	text := markdownNote[:400]
	for _, c := range []struct {
		name  string
		write func(*strings.Builder, string)
	}{{"runebyrune", collapsedRuneByRune}, {"runs", writeCollapsed}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var sb strings.Builder
				c.write(&sb, text)
			}
		})
	}
}
