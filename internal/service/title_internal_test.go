package service

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"munin/internal/memory"
)

// splitTitle is how the title was derived before titleFromContent read only
// up to the title: the reference it must agree with.
func splitTitle(content string) string {
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(memory.OneLine(line)), "#"))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > 80 {
			r := []rune(line)
			line = string(r[:79]) + "…"
		}
		return line
	}
	return ""
}

// titlePieces are what the title rules treat apart: spaces (ASCII, no-break,
// ideographic), heading marks, line breaks, controls, bidi controls, letters
// of one to four bytes, and a byte that is not UTF-8.
var titlePieces = []string{" ", " ", "\u00a0", "\u3000", "#", "#", "\n", "\n", "\r", "\t", "\x1b", "\u0085", "\u2028", "\u202e",
	"a", "b", "é", "ß", "€", "😀", "\xff", "x y", "## ", "word"}

func randomTitleText(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(250) {
		sb.WriteString(titlePieces[rng.IntN(len(titlePieces))])
	}
	return sb.String()
}

func TestTitleFromContentMatchesSplitMap(t *testing.T) {
	long := strings.Repeat("ä", 79)
	cases := []string{
		"", "\n", "\n\n#\n  \n", "# Title", "  ## Title ##  \nbody", "#", "# # x", "#\t# x", "\u202e\n# \u202eabc",
		long, long + "b", long + "bc", long + "b   ", long + "b   c", long + "\u202eb\u202e", long + "b\u202e c",
		"   \u00a0" + long + "bc\u3000", strings.Repeat("x ", 40) + "y", strings.Repeat(" ", 70000) + "z",
		"\xff\xfe" + long, strings.Repeat("\n", 1000) + "end",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		cases = append(cases, randomTitleText(rng))
	}
	for _, c := range cases {
		if got, want := titleFromContent(c), splitTitle(c); got != want {
			t.Fatalf("titleFromContent(%q) = %q, want %q", c, got, want)
		}
	}
}

func FuzzTitleFromContent(f *testing.F) {
	for _, s := range []string{"", "# a\nb", strings.Repeat("é", 81), " \u202e#  x \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := titleFromContent(s), splitTitle(s); got != want {
			t.Fatalf("titleFromContent(%q) = %q, want %q", s, got, want)
		}
	})
}

// bigLine is a remember's largest content (64 KB) on one line of words, as
// the hostile load test's attack 2 writes it.
func bigLine() string {
	rng := rand.New(rand.NewPCG(3, 4))
	var sb strings.Builder
	for sb.Len() < memory.DefaultMaxContent-11 {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		for range 3 + rng.IntN(8) {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	return sb.String()
}

// TestTitleFromContentAllocatesOnlyTheTitle: deriving the title of 64 KB
// of content copies only the title. Every remember without a title derives
// one before the byte budget refuses it; copying the line and four times its
// size in runes made refused writes of one key cost the CPU (and the
// collector's time) other projects' recalls needed.
func TestTitleFromContentAllocatesOnlyTheTitle(t *testing.T) {
	content := bigLine()
	const calls = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		if titleFromContent(content) == "" {
			t.Fatal("no title")
		}
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / calls; perCall > 1024 {
		t.Fatalf("deriving the title of %d bytes allocated %d bytes per call, want at most 1 KiB (the title is %d)",
			len(content), perCall, len(titleFromContent(content)))
	}
}

func BenchmarkTitleFromContent64K(b *testing.B) {
	content := bigLine()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		titleFromContent(content)
	}
}
