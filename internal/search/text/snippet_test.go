package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSnippetBounds(t *testing.T) {
	// Many matches, multi-byte text and no spaces must still stay bounded.
	for _, content := range []string{
		strings.Repeat("zebra ", 200),
		strings.Repeat("äöüß", 300) + " zebra " + strings.Repeat("äöüß", 300),
		strings.Repeat("x", 1000),
	} {
		spans := []Span{}
		for i := 0; i+5 <= len(content); {
			j := strings.Index(content[i:], "zebra")
			if j < 0 {
				break
			}
			spans = append(spans, Span{i + j, i + j + 5})
			i += j + 5
		}
		s := Snippet(content, spans)
		if n := utf8.RuneCountInString(s); n > 200 || n == 0 || !utf8.ValidString(s) {
			t.Errorf("snippet of %d bytes has %d runes: %q", len(content), n, s)
		}
	}
}
