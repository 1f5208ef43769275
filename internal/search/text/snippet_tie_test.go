package text

import (
	"strings"
	"testing"
)

// When two windows of a content hold equally many matches, the snippet
// shows the earlier one (the one a reader meets first); a later window
// wins only with more matches. Spans are the matched words' byte ranges,
// as the index reports them.
func TestSnippetTieBreakPrefersTheEarlierWindow(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 12) // 324 runes: the windows cannot overlap
	for _, c := range []struct {
		name, content string
		want, not     string
	}{
		{"equal: the earlier wins", "north: import failed. " + filler + "south: import failed.",
			"north: «import» «failed»", "south"},
		{"more matches later: the later wins", "north: import. " + filler + "south: import failed.",
			"south: «import» «failed»", "north"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Snippet(c.content, spansOf(c.content, "import", "failed"))
			if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
				t.Fatalf("snippet %q, want the window with %q, not %q", got, c.want, c.not)
			}
		})
	}
}

// spansOf is every occurrence of the words in content, as match spans.
func spansOf(content string, words ...string) []Span {
	var out []Span
	for _, w := range words {
		for off := 0; ; {
			i := strings.Index(content[off:], w)
			if i < 0 {
				break
			}
			out = append(out, Span{off + i, off + i + len(w)})
			off += i + len(w)
		}
	}
	return out
}
