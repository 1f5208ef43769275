package web

import (
	"bytes"
	"html"
	"html/template"
	"strings"
)

// The bounds of rendering one entry's Markdown. goldmark's parser is
// quadratic on some inputs: 65,536 '>' (one blockquote inside the next)
// took 2.3 s to parse, "[a](" repeated on one line 1.9 s (each link opener
// scans the rest of the line for its destination), "*a_" repeated 2.4 s
// (emphasis delimiters are matched pairwise within a paragraph). Those
// costs grow with the nesting of containers and with the inline markers of
// a paragraph times its length, so both are measured in one linear pass
// before goldmark sees the text; content past a bound is shown as escaped
// plain text — every character still there, nothing interpreted.
const (
	// maxMarkdownNesting is the deepest nesting of block containers
	// (blockquotes, list items) at the start of one line that is rendered.
	// Notes nest a list in a quote in a list; nobody writes 32 levels.
	maxMarkdownNesting = 32
	// maxInlineWork bounds the sum, over the runs of non-blank lines, of
	// the run's inline markers times its length in bytes: the worst case
	// of goldmark's inline parsing of a paragraph. 16M is some tens of
	// milliseconds of the worst input; a 64 KiB note of prose and code
	// with blank lines between its paragraphs stays far below it.
	maxInlineWork = 16 << 20
	// minMarkdownOutput is the least output allowed; an entry's rendered
	// HTML may be the larger of it and markdownExpansion times its source.
	minMarkdownOutput = 256 << 10
	markdownExpansion = 8
)

// Reasons an entry is shown as plain text instead of rendered Markdown.
const (
	plainNesting = "its Markdown nests blockquotes or lists deeper than 32 levels"
	plainInline  = "its Markdown has too many links, emphasis or code markers in long paragraphs"
	plainOutput  = "its rendered Markdown would be too large"
)

// rendered is an entry's content as a page shows it: HTML, and when the
// Markdown was not rendered the reason why (the page says so).
type rendered struct {
	HTML  template.HTML
	Plain string
}

// renderBounded renders src as Markdown within the bounds above, or as
// escaped plain text with the reason.
func renderBounded(src string) rendered {
	if reason := markdownTooCostly(src); reason != "" {
		return plainText(src, reason)
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		// goldmark only fails on a failing writer; show the text instead.
		return plainText(src, "it could not be rendered")
	}
	out := sanitizer.SanitizeBytes(buf.Bytes())
	if len(out) > max(minMarkdownOutput, markdownExpansion*len(src)) {
		return plainText(src, plainOutput)
	}
	return rendered{HTML: template.HTML(out)}
}

// plainText is src escaped in a <pre>: at most six bytes per byte of src.
func plainText(src, reason string) rendered {
	return rendered{HTML: template.HTML("<pre>" + html.EscapeString(src) + "</pre>"), Plain: reason}
}

// markdownTooCostly says why src would cost goldmark too much, or "".
func markdownTooCostly(src string) string {
	work, markers, run := 0, 0, 0
	for line := range strings.Lines(src) {
		if strings.TrimSpace(line) == "" {
			work += markers * run
			markers, run = 0, 0
			continue
		}
		if containerDepth(line) > maxMarkdownNesting {
			return plainNesting
		}
		run += len(line)
		markers += strings.Count(line, "[") + strings.Count(line, "]") + strings.Count(line, "(") +
			strings.Count(line, ")") + strings.Count(line, "<") + strings.Count(line, "*") +
			strings.Count(line, "_") + strings.Count(line, "~") + strings.Count(line, "!") + strings.Count(line, "`")
		if work+markers*run > maxInlineWork {
			return plainInline
		}
	}
	return ""
}

// containerDepth counts the block container markers a line starts with:
// '>' and list markers ("-", "*", "+", "1.", "1)") each followed by a
// space, spaces between them skipped. It stops at the first other
// character, so it reads at most the line once.
func containerDepth(line string) int {
	depth, i := 0, 0
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '>':
			depth++
			i++
		case c == '-' || c == '*' || c == '+':
			if !markerEnds(line, i+1) {
				return depth
			}
			depth++
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 10 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j >= len(line) || (line[j] != '.' && line[j] != ')') || !markerEnds(line, j+1) {
				return depth
			}
			depth++
			i = j + 1
		default:
			return depth
		}
	}
	return depth
}

// markerEnds: a list marker ending before line[i] is one (followed by
// white space or the end of the line).
func markerEnds(line string, i int) bool {
	return i >= len(line) || strings.IndexByte(" \t\r\n", line[i]) >= 0
}
