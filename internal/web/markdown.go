package web

import (
	"bytes"
	"html"
	"html/template"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/sergi/go-diff/diffmatchpatch"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Agent content is untrusted. Markdown is rendered by goldmark without raw
// HTML, then everything goes through bluemonday's UGC policy, which drops
// scripts, event handlers and javascript: URLs whatever goldmark let
// through. The page's CSP is a third line behind both.
var (
	md        = goldmark.New(goldmark.WithExtensions(extension.GFM))
	sanitizer = newSanitizer()
)

func newSanitizer() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}

// renderMarkdown turns an entry's content into safe HTML.
func renderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		// goldmark only fails on a failing writer; show the text instead.
		return template.HTML("<pre>" + html.EscapeString(src) + "</pre>")
	}
	return template.HTML(sanitizer.SanitizeBytes(buf.Bytes()))
}

// highlight turns a search snippet's «match» marks into <mark> elements.
// The snippet is plain text: it is escaped first, and only then are the
// marks (which escaping leaves alone) replaced, balanced, so nothing in the
// snippet can become markup.
func highlight(snippet string) template.HTML {
	esc := html.EscapeString(snippet)
	var b strings.Builder
	open := false
	for _, r := range esc {
		switch {
		case r == '«' && !open:
			b.WriteString("<mark>")
			open = true
		case r == '»' && open:
			b.WriteString("</mark>")
			open = false
		default:
			b.WriteRune(r)
		}
	}
	if open {
		b.WriteString("</mark>")
	}
	return template.HTML(b.String())
}

// diffLine is one line of a diff: Op is ' ', '+' or '-'; a Gap line stands
// for unchanged lines left out.
type diffLine struct {
	Op   string
	Text string
	Old  int // line number in the old text (0: none)
	New  int // line number in the new text (0: none)
	Gap  bool
}

// diffContext is how many unchanged lines are shown around a change.
const diffContext = 3

// lineDiff compares two texts line by line (diffmatchpatch's line mode) and
// returns the changed lines with diffContext lines of context.
func lineDiff(a, b string) []diffLine {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var all []diffLine
	oldNo, newNo := 1, 1
	for _, d := range diffs {
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				all = append(all, diffLine{Op: " ", Text: l, Old: oldNo, New: newNo})
				oldNo++
				newNo++
			case diffmatchpatch.DiffDelete:
				all = append(all, diffLine{Op: "-", Text: l, Old: oldNo})
				oldNo++
			case diffmatchpatch.DiffInsert:
				all = append(all, diffLine{Op: "+", Text: l, New: newNo})
				newNo++
			}
		}
	}
	// Keep lines within diffContext of a change; fold the rest into gaps.
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Op == " " {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(all)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	var out []diffLine
	for i, l := range all {
		if keep[i] {
			out = append(out, l)
		} else if len(out) == 0 || !out[len(out)-1].Gap {
			out = append(out, diffLine{Gap: true})
		}
	}
	return out
}
