package text

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Plain text of Markdown. Entries are Markdown, and a snippet cut from the
// raw content showed `**SQLite**`, `# Heading`, `[text](url)` and list
// markers. A snippet is cut from the text a reader sees instead: goldmark
// (with GFM, as the web UI renders it, internal/web/markdown.go) parses the
// content, and the text segments of its tree — words of paragraphs,
// headings, list items, table cells, link and image labels, code — are
// joined with a space between blocks. Raw HTML is left out, as the web UI
// omits it. Each segment remembers where it came from in the content, so
// the matched spans (byte ranges in the content, text.Marker) land on the
// same words in the plain text.

// Rendering all of a long entry for a window of 160 runes would cost far
// more than the rest of the snippet (goldmark parses about 40 MB/s), so
// only a region is rendered: the blocks around the best window of the raw
// content, from the blank line before it to the blank line after it (or a
// line's start and end, within regionSlack bytes). A region starting inside
// a fenced code block, or missing a reference link's definition, shows a
// few more Markdown characters; the words are the same.
const (
	// regionRunes is how much raw content after the window's start is
	// rendered at least: markup (a link's URL, say) takes room the visible
	// text does not.
	regionRunes = 4 * snippetRunes
	// regionSlack is how far a region reaches for a block boundary.
	regionSlack = 1024
)

// region returns the byte range of content to render for spans (clean).
func region(content string, spans []Span) (from, to int) {
	start := 0
	if len(spans) > 0 {
		start = backToWord(content, spans[bestSpan(content, spans)].Start)
	}
	end := advance(content, start, regionRunes)
	return blockStart(content, start), blockEnd(content, end)
}

// blockStart is the start of the block holding pos: after the last blank
// line before it, else the start of its line, within regionSlack bytes.
func blockStart(content string, pos int) int {
	lo := max(pos-regionSlack, 0)
	back := content[lo:pos]
	if lo == 0 && !strings.Contains(back, "\n\n") {
		return 0
	}
	if i := strings.LastIndex(back, "\n\n"); i >= 0 {
		return lo + i + 2
	}
	if i := strings.LastIndexByte(back, '\n'); i >= 0 {
		return lo + i + 1
	}
	return pos
}

// blockEnd is the end of the block holding pos: the next blank line, else
// the end of its line, within regionSlack bytes.
func blockEnd(content string, pos int) int {
	hi := min(pos+regionSlack, len(content))
	ahead := content[pos:hi]
	if hi == len(content) && !strings.Contains(ahead, "\n\n") {
		return len(content)
	}
	if i := strings.Index(ahead, "\n\n"); i >= 0 {
		return pos + i
	}
	if i := strings.IndexByte(ahead, '\n'); i >= 0 {
		return pos + i
	}
	return pos
}

// markdown parses entries as the web UI renders them (GFM).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

// plain is a content's visible text and where its pieces came from.
type plain struct {
	text   string
	pieces []piece // in order of src
}

// piece is a run of plain text copied verbatim from the content: text[at:at+n]
// == content[src:src+n].
type piece struct{ at, src, n int }

// markdownBytes are the bytes that can make Markdown differ from its text.
// Content without any of them (and without a list's "1." or "1)") is its
// own plain text, and is not parsed.
const markdownBytes = "\\`*_[]<>#&|~=-+!"

// plainOf renders content to its visible text.
func plainOf(content string) plain {
	if isPlain(content) {
		return plain{text: content, pieces: []piece{{0, 0, len(content)}}}
	}
	src := []byte(content)
	doc := markdown.Parse(gmtext.NewReader(src))
	w := plainWriter{src: src}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			if _, ok := n.(*ast.Heading); ok {
				w.endHeading()
			} else if n.Type() == ast.TypeBlock {
				w.space()
			}
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			w.segment(n.Segment.Start, n.Segment.Stop, !n.IsRaw())
			if n.SoftLineBreak() || n.HardLineBreak() {
				w.space()
			}
		case *ast.String:
			w.found(n.Value)
		case *ast.AutoLink:
			w.found(n.Label(src))
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			lines := n.Lines()
			for i := range lines.Len() {
				l := lines.At(i)
				w.segment(l.Start, l.Stop, false)
			}
			w.space()
		default:
			if n.Type() == ast.TypeBlock {
				w.space()
			}
		}
		return ast.WalkContinue, nil
	})
	p := plain{text: w.b.String(), pieces: w.pieces}
	if !slices.IsSortedFunc(p.pieces, func(a, b piece) int { return a.src - b.src }) {
		sort.SliceStable(p.pieces, func(i, j int) bool { return p.pieces[i].src < p.pieces[j].src })
	}
	return p
}

// isPlain tells whether content has nothing Markdown would change but its
// whitespace.
func isPlain(content string) bool {
	if strings.ContainsAny(content, markdownBytes) {
		return false
	}
	for i := 1; i < len(content); i++ {
		if c := content[i]; (c == '.' || c == ')') && '0' <= content[i-1] && content[i-1] <= '9' {
			return false
		}
	}
	return true
}

// plainWriter collects the visible text and its pieces.
type plainWriter struct {
	src    []byte
	b      strings.Builder
	pieces []piece
	cursor int // where the last text copied from src ended
}

// segment copies src[start:stop]; unescape drops the backslash of an
// escaped punctuation character (\* shows as *), as the renderer does
// outside code.
func (w *plainWriter) segment(start, stop int, unescape bool) {
	for start < stop {
		end := stop
		if unescape {
			if i := bytes.IndexByte(w.src[start:stop], '\\'); i >= 0 && start+i+1 < stop && util.IsPunct(w.src[start+i+1]) {
				end = start + i
			}
		}
		w.copy(start, end)
		if end == stop {
			break
		}
		start = end + 1 // past the backslash; the escaped character starts the next run
		w.copy(start, start+1)
		start++
	}
}

// copy appends src[start:end] as one piece.
func (w *plainWriter) copy(start, end int) {
	if start >= end {
		return
	}
	w.pieces = append(w.pieces, piece{at: w.b.Len(), src: start, n: end - start})
	w.b.Write(w.src[start:end])
	w.cursor = end
}

// found appends text that a node holds without its position (an autolink's
// label, a string): it is looked for in the content after the last text
// copied, and appended unmapped if it is not there.
func (w *plainWriter) found(text []byte) {
	if len(text) == 0 {
		return
	}
	if i := bytes.Index(w.src[w.cursor:], text); i >= 0 {
		w.copy(w.cursor+i, w.cursor+i+len(text))
		return
	}
	w.b.Write(text)
}

// endHeading separates a heading from the text after it by a dash, so a
// snippet does not run "Backups Copy the files" together; a heading that
// ends in punctuation needs only the space.
func (w *plainWriter) endHeading() {
	t := strings.TrimRight(w.b.String(), " ")
	if t == "" || strings.ContainsRune(".:!?;", rune(t[len(t)-1])) {
		w.space()
		return
	}
	w.b.WriteString(" — ")
}

// space separates blocks and lines by one space (whitespace is collapsed
// later, in render).
func (w *plainWriter) space() {
	if w.b.Len() > 0 {
		w.b.WriteByte(' ')
	}
}

// spans maps spans of the content (clean: sorted, not overlapping) to the
// plain text. A span's ends that fall in markup move inward to the nearest
// copied text; a span with no copied text in it is dropped.
func (p plain) spans(spans []Span) []Span {
	out := make([]Span, 0, len(spans))
	for _, s := range spans {
		// The first piece ending after s.Start, and the last starting
		// before s.End.
		i := sort.Search(len(p.pieces), func(i int) bool { return p.pieces[i].src+p.pieces[i].n > s.Start })
		j := sort.Search(len(p.pieces), func(j int) bool { return p.pieces[j].src >= s.End }) - 1
		if i >= len(p.pieces) || j < i {
			continue
		}
		a, b := p.pieces[i], p.pieces[j]
		start := a.at + max(s.Start-a.src, 0)
		end := b.at + min(s.End-b.src, b.n)
		if start < end {
			out = append(out, Span{start, end})
		}
	}
	return out
}
