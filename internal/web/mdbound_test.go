package web

import (
	"fmt"
	"strings"
	"testing"

	"munin/internal/memory"
)

// TestMarkdownBoundsFallBackToText: inputs on which goldmark's parser is
// quadratic (seconds for 64 KiB each before the bounds) are shown as
// escaped plain text with the reason, at most six bytes out per byte in.
func TestMarkdownBoundsFallBackToText(t *testing.T) {
	n := memory.DefaultMaxContent
	for _, tc := range []struct{ name, src, reason string }{
		{"nested quotes", strings.Repeat(">", n), plainNesting},
		{"nested quotes with spaces", strings.Repeat("> ", n/2), plainNesting},
		{"nested ordered lists", strings.Repeat("1. ", n/3), plainNesting},
		{"quotes in lists", strings.Repeat("- > ", n/4), plainNesting},
		{"many list items", strings.Repeat("- a\n", n/4), plainBlocks},
		{"many short quotes", strings.Repeat("> - a\n", n/6), plainBlocks},
		{"many table rows", "|a|b|\n|-|-|\n" + strings.Repeat("|x|\n", n/4), plainBlocks},
		{"many link definitions", strings.Repeat("[a]: b\n", n/7), plainInline},
		{"link openers on one line", strings.Repeat("[a](", n/4), plainInline},
		{"image openers", strings.Repeat("![a](", n/5), plainInline},
		{"pointy destinations", strings.Repeat("[a](< ", n/6), plainInline},
		{"emphasis delimiters", strings.Repeat("*a_", n/3), plainInline},
		{"brackets", strings.Repeat("[", n/2) + strings.Repeat("]", n/2), plainInline},
		{"autolinks, 9 bytes out per byte in", strings.Repeat("www.a.b ", n/8), plainOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderBounded(tc.src)
			if got.Plain != tc.reason {
				t.Fatalf("reason %q, want %q", got.Plain, tc.reason)
			}
			if len(got.HTML) > 6*len(tc.src)+len("<pre></pre>") || !strings.HasPrefix(string(got.HTML), "<pre>") {
				t.Fatalf("plain text of %d bytes is %d bytes: %.80s", len(tc.src), len(got.HTML), got.HTML)
			}
		})
	}
}

// TestMarkdownBoundsKeepNotes: what people write stays Markdown — nesting
// of a few levels, a long note of prose with links, a big code block.
func TestMarkdownBoundsKeepNotes(t *testing.T) {
	var prose strings.Builder
	for i := 0; prose.Len() < memory.DefaultMaxContent-200; i++ {
		fmt.Fprintf(&prose, "Paragraph %d says *why* we chose [the index](https://example.org/%d) and `code`.\n\n", i, i)
	}
	var code strings.Builder
	code.WriteString("```go\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&code, "\tif x[%d] != nil { f(x[%d]*y, \"<%d>\") }\n", i, i, i)
	}
	code.WriteString("```\n")
	for _, tc := range []struct{ name, src, want string }{
		{"nesting", "> - quoted list\n>   1. nested\n>      > deeper", "<blockquote>"},
		{"prose with links", prose.String(), `<a href="https://example.org/1"`},
		{"code block", code.String(), "<pre><code"},
		{"a table", "| a | b |\n|---|---|\n" + strings.Repeat("| [x](https://example.org) | *y* |\n", 500), "<table>"},
		{"link definitions", strings.Repeat("See [a][] and [b][].\n\n", 50) + "[a]: https://a.example\n[b]: https://b.example\n", `<a href="https://a.example"`},
		{"a long list", strings.Repeat("- a point worth making, with a [link](https://example.org)\n", 1000), "<li>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderBounded(tc.src)
			if got.Plain != "" || !strings.Contains(string(got.HTML), tc.want) {
				t.Fatalf("shown as plain text (%q) or without %s: %.200s", got.Plain, tc.want, got.HTML)
			}
		})
	}
}

// TestContainerDepth counts only real container markers.
func TestContainerDepth(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{
		{"plain text", 0},
		{"> quote", 1},
		{">>> three", 3},
		{"> - 1. item", 3},
		{"-not a list", 0},
		{"1.5 is a number", 0},
		{"- ", 1},
		{"-\n", 1},
		{"  * > 2) x", 3},
	} {
		if got := containerDepth(tc.line); got != tc.want {
			t.Errorf("containerDepth(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}
