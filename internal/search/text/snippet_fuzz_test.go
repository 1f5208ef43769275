package text

import (
	"testing"
	"unicode/utf8"
)

// FuzzSnippet: any content (Markdown or not) with any match offsets gives a
// bounded snippet of valid UTF-8 and never panics (a long matched word once
// sliced out of range). Offsets are made from the fuzzer's numbers, in and out of range.
func FuzzSnippet(f *testing.F) {
	f.Add("the nightly import crashed at org.example.persistence.repository.find_all when empty", 30, 60, 5, 2)
	f.Add("äöüß zebra äöüß", 9, 14, 0, 0)
	f.Add("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx end", 0, 180, 0, 0)
	f.Add("# Title\n\n- **bold** [link](https://x.org) `code`\n\n```\nfenced\n```\n| a | b |\n|---|---|\n| c | d |", 12, 20, 60, 4)
	f.Add("\\*escaped\\* <b>html</b> <https://auto.link> ![alt](i.png) ~~del~~", 2, 9, 30, 4)
	f.Fuzz(func(t *testing.T, content string, start, end, start2, len2 int) {
		if !utf8.ValidString(content) {
			return // contents come from valid JSON text
		}
		spans := []Span{{start, end}, {start2, start2 + len2}}
		s := Snippet(content, spans)
		if !utf8.ValidString(s) {
			t.Fatalf("snippet is not valid UTF-8: %q", s)
		}
		if n := utf8.RuneCountInString(s); n > 1+snippetRunes+2*maxMarks+1 {
			t.Fatalf("snippet has %d runes: %q", n, s)
		}
	})
}
