package web

import (
	"html"
	"html/template"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// Agent content is untrusted. Markdown is rendered by goldmark without raw
// HTML, images become links (below), then everything goes through a
// bluemonday allowlist of what Markdown makes, which drops scripts, event
// handlers, javascript: URLs and any element that loads something, whatever
// goldmark let through. The page's CSP is a third line behind both.
var (
	md = goldmark.New(goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(imageAsLink{}, 100))))
	sanitizer = newSanitizer()
)

// newSanitizer allows the elements goldmark's Markdown (with GFM) produces,
// links with http, https, mailto or relative URLs, and nothing that a
// browser fetches by itself: no img, media, frames, styles or link elements.
func newSanitizer() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowStandardURLs()
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("title").Matching(bluemonday.Paragraph).OnElements("a")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
		"em", "strong", "del", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td")
	return p
}

// renderMarkdown turns an entry's content into safe HTML, within the
// bounds of renderBounded.
func renderMarkdown(src string) template.HTML { return renderBounded(src).HTML }

// imageAsLink renders a Markdown image as a link to it, showing its alt
// text and URL: the browser fetches nothing when a page shows a memory. An
// image URL of this server would otherwise be a GET sent with the viewer's
// session (a search in another project, say), and one elsewhere would tell
// its owner who read the memory and when.
type imageAsLink struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (imageAsLink) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, renderImageAsLink)
}

func renderImageAsLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	alt := altText(n, source)
	if alt == "" {
		alt = "image"
	}
	_, _ = w.WriteString(`<a href="`)
	if dest := util.URLEscape(n.Destination, true); !gmhtml.IsDangerousURL(dest) {
		_, _ = w.Write(util.EscapeHTML(dest))
	}
	_, _ = w.WriteString(`">`)
	_, _ = w.Write(util.EscapeHTML([]byte(alt)))
	_, _ = w.WriteString(`</a> (image not loaded: <code>`)
	_, _ = w.Write(util.EscapeHTML(n.Destination))
	_, _ = w.WriteString(`</code>)`)
	return ast.WalkSkipChildren, nil
}

// altText is the plain text of an image's description.
func altText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(source))
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
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
