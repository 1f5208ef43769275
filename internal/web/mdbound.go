package web

import (
	"bytes"
	"html"
	"html/template"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The bounds of rendering one entry's Markdown. goldmark's parser is
// quadratic on some inputs: 65,536 '>' (one blockquote inside the next)
// took 2.3 s to parse, "[a](" repeated on one line 1.9 s (each link opener
// scans the rest of the line for its destination), "*a_" repeated 2.4 s
// (emphasis delimiters are matched pairwise within a paragraph). Those
// costs grow with the nesting of containers and with the inline markers of
// a paragraph times its length, so both are measured in one linear pass
// before goldmark parses the text inline; content past a bound is shown as escaped
// plain text — every character still there, nothing interpreted.
const (
	// maxMarkdownNesting is the deepest nesting of block containers
	// (blockquotes, list items) at the start of one line that is rendered.
	// Notes nest a list in a quote in a list; nobody writes 32 levels.
	maxMarkdownNesting = 32
	// maxContainerMarkers bounds the container markers of all lines
	// together, and lines with a '|' (table rows) count one each: each
	// opens a block, some microseconds of goldmark's time, and 64 KiB of
	// "- " made 20,000 list items (60–130 ms), of "|x|" a table of 16,000
	// rows (95 ms). A long note of bullet points has one or two thousand.
	maxContainerMarkers = 8192
	// maxInlineWork bounds the sum, over the paragraphs and headings, of
	// their inline markers times their length in bytes: the worst case of
	// goldmark's inline parsing of a paragraph. 16M is some tens of
	// milliseconds of the worst input; a 64 KiB note of prose, lists and
	// code stays far below it.
	maxInlineWork = 16 << 20
	// minMarkdownOutput is the least output allowed; an entry's rendered
	// HTML may be the larger of it and markdownExpansion times its source.
	minMarkdownOutput = 256 << 10
	markdownExpansion = 8
)

// Reasons an entry is shown as plain text instead of rendered Markdown.
const (
	plainNesting = "its Markdown nests blockquotes or lists deeper than 32 levels"
	plainBlocks  = "its Markdown has more than 8,192 blockquote, list and table-row markers"
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
// First a pass over the lines counts container markers (the block
// parser's cost); then goldmark's block parser alone — without inline
// parsers, so linear — finds the paragraphs and headings whose inline
// content would be parsed, and their markers times their length is summed.
func markdownTooCostly(src string) string {
	containers := 0
	for line := range strings.Lines(src) {
		depth := containerDepth(line)
		if depth > maxMarkdownNesting {
			return plainNesting
		}
		if strings.Contains(line, "|") {
			depth++
		}
		if containers += depth; containers > maxContainerMarkers {
			return plainBlocks
		}
	}
	source := []byte(src)
	doc := blockParser.Parse(text.NewReader(source))
	work := 0
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindParagraph, ast.KindTextBlock, ast.KindHeading, extast.KindTableCell:
		default:
			return ast.WalkContinue, nil
		}
		size, markers := 0, 0
		lines := n.Lines()
		for i := range lines.Len() {
			at := lines.At(i)
			seg := at.Value(source)
			size += len(seg)
			markers += inlineMarkers(seg)
		}
		work += size * markers
		return ast.WalkSkipChildren, nil
	})
	if work > maxInlineWork {
		return plainInline
	}
	return ""
}

// blockParser is goldmark's parser with its block parsers only: it finds
// the blocks whose text the full parser would parse inline, at a cost
// linear in the text (container depth bounded). GFM's tables are found, so
// that each cell counts on its own, as goldmark parses it; without the
// other paragraph transformer, link reference definitions count as the paragraph they
// stand in: 9,000 of them cost goldmark 65 ms, and here they exceed the
// inline bound instead.
var blockParser = parser.NewParser(parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithParagraphTransformers(util.Prioritized(extension.NewTableParagraphTransformer(), 200)))

// inlineMarkers counts the characters that open or close inline
// constructs (links, images, emphasis, strikethrough, code, raw HTML).
func inlineMarkers(b []byte) int {
	n := 0
	for _, c := range b {
		switch c {
		case '[', ']', '(', ')', '<', '*', '_', '~', '!', '`':
			n++
		}
	}
	return n
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
