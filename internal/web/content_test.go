package web

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// fetchingContent is a memory that tries every way of making a viewer's
// browser send a request by merely showing it: Markdown images (same-origin,
// with a search query; elsewhere; reference style), and raw HTML images,
// srcset, media, prefetch links, CSS url(), legacy background attributes,
// input images and frames (goldmark leaves raw HTML out; the sanitizer is
// the second line).
const fetchingContent = "# Loads\n\n" +
	"![search](/w/ws/p/proj?q=secret+plan) ![](https://tracker.example/pixel.png \"t\")\n\n" +
	"![ref][pic]\n\n[pic]: /w/ws/p/proj/e/a?version=1\n\n" +
	"<img src=\"/w/ws/p/proj?q=raw\" srcset=\"/w/ws/p/proj?q=srcset 2x\">\n\n" +
	"<picture><source srcset=\"/w/ws/p/proj?q=source\"></picture> <video poster=\"/w/ws/p/proj?q=poster\" src=\"/v\"></video>\n\n" +
	"<link rel=\"prefetch\" href=\"/w/ws/p/proj?q=prefetch\"> <link rel=\"stylesheet\" href=\"/x.css\">\n\n" +
	"<p style=\"background:url(/w/ws/p/proj?q=css)\">styled</p> <style>body{background:url(/w/ws/p/proj?q=style)}</style>\n\n" +
	"<table background=\"/w/ws/p/proj?q=bg\"><tr><td background=\"/w/ws/p/proj?q=td\">cell</td></tr></table>\n\n" +
	"<input type=\"image\" src=\"/w/ws/p/proj?q=input\"> <iframe src=\"/w/ws/p/proj?q=frame\"></iframe> <object data=\"/o\"></object>\n\n" +
	"<a href=\"/w/ws/p/proj\" ping=\"/w/ws/p/proj?q=ping\">pinged link</a> <svg><image href=\"/w/ws/p/proj?q=svg\"/></svg>\n"

// fetchers lists what in an HTML fragment makes a browser fetch by itself:
// elements that load, and attributes that carry a URL or style, on any
// element (href only counts off <a>, which loads nothing until clicked).
func fetchers(t *testing.T, fragment string) []string {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(fragment), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "img", "image", "picture", "source", "video", "audio", "track", "link", "style", "input",
				"iframe", "frame", "object", "embed", "svg", "use", "meta", "base", "form", "script":
				bad = append(bad, "<"+n.Data+">")
			}
			for _, a := range n.Attr {
				switch strings.ToLower(a.Key) {
				case "src", "srcset", "poster", "background", "style", "ping", "data", "lowsrc", "dynsrc",
					"longdesc", "action", "formaction", "xlink:href":
					bad = append(bad, "<"+n.Data+" "+a.Key+">")
				case "href":
					if n.Data != "a" {
						bad = append(bad, "<"+n.Data+" href>")
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return bad
}

// TestEntryContentLoadsNothing: showing a memory makes the browser fetch
// nothing. A Markdown image becomes a link showing its description and URL;
// every other construct that loads is dropped, by goldmark or the sanitizer.
func TestEntryContentLoadsNothing(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"markdown image same origin", "![x](/w/other/p/gamma?q=plans)"},
		{"markdown image elsewhere", "![pixel](https://tracker.example/p.png)"},
		{"markdown image reference", "![r][p]\n\n[p]: /w/ws/p/proj?q=x"},
		{"markdown image in link", "[![x](/i.png)](/w/ws/p/proj)"},
		{"everything", fetchingContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(renderMarkdown(tc.src))
			for _, b := range fetchers(t, out) {
				t.Errorf("rendered content has %s:\n%s", b, out)
			}
		})
	}
	// The image stays visible as a link with its description and URL.
	out := string(renderMarkdown("![the plan](/w/other/p/gamma?q=plans)"))
	want := `<a href="/w/other/p/gamma?q=plans" rel="nofollow noreferrer">the plan</a> (image not loaded: <code>/w/other/p/gamma?q=plans</code>)`
	if !strings.Contains(out, want) {
		t.Errorf("image rendered as\n%s\nwant it to contain\n%s", out, want)
	}
	// A javascript: image keeps its text and loses its link.
	if out := string(renderMarkdown("![x](javascript:alert(1))")); strings.Contains(out, "<a") || !strings.Contains(out, "javascript:alert(1)</code>") {
		t.Errorf("javascript: image rendered as %s", out)
	}
}

// TestSanitizerDropsWhatLoads: the sanitizer alone (the second line, should
// raw HTML ever reach it) keeps no element or attribute that fetches.
func TestSanitizerDropsWhatLoads(t *testing.T) {
	for _, raw := range []string{
		`<img src="/w/ws/p/proj?q=x">`,
		`<img srcset="/w/ws/p/proj?q=x 1x">`,
		`<picture><source srcset="/a"><img src="/b"></picture>`,
		`<video src="/v" poster="/p"></video><audio src="/a"></audio>`,
		`<link rel="prefetch" href="/w/ws/p/proj?q=x">`,
		`<p style="background:url(/x)">s</p><style>p{background:url(/y)}</style>`,
		`<table background="/t"><tr><td background="/u">c</td></tr></table>`,
		`<input type="image" src="/i">`,
		`<iframe src="/f"></iframe><object data="/o"></object><embed src="/e">`,
		`<a href="/ok" ping="/ping">x</a>`,
		`<svg><image href="/s"/></svg>`,
		`<area href="/area"><map name="m"></map><img usemap="#m" src="/m">`,
	} {
		out := sanitizer.Sanitize(raw)
		for _, b := range fetchers(t, out) {
			t.Errorf("sanitized %s keeps %s: %s", raw, b, out)
		}
	}
}

// TestImageEntryShowsLink: the entry page of a memory with images shows
// each as a link with its URL and loads none of them.
func TestImageEntryShowsLink(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "notes/img", fetchingContent)
	b := u.signIn(t, u.admin)
	code, page := b.get(projPath + "/e/notes/img")
	if code != http.StatusOK {
		t.Fatalf("entry page: %d", code)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var content *html.Node
	var find func(n *html.Node)
	find = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == "content" {
				content = n
			}
		}
		for c := n.FirstChild; c != nil && content == nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if content == nil {
		t.Fatalf("no #content on the entry page:\n%s", page)
	}
	var sb strings.Builder
	for c := content.FirstChild; c != nil; c = c.NextSibling {
		_ = html.Render(&sb, c)
	}
	for _, bad := range fetchers(t, sb.String()) {
		t.Errorf("entry page content has %s", bad)
	}
	if !strings.Contains(sb.String(), `>search</a> (image not loaded: <code>/w/ws/p/proj?q=secret+plan</code>)`) {
		t.Errorf("the image is not shown as a link with its URL:\n%s", sb.String())
	}
}

// TestWebSearchIsNotLogged: a search page is a GET that any page can make a
// browser send, so it writes no search-log row in the person's name; agents'
// recalls are still logged.
func TestWebSearchIsNotLogged(t *testing.T) {
	u := newUI(t)
	u.remember(t, u.writerKey, "a", "sqlite wal")
	b := u.signIn(t, u.admin)
	for _, q := range []string{"sqlite", "kubernetes"} {
		code, body := b.get(projPath + "?q=" + q)
		if code != http.StatusOK || !strings.Contains(body, `id="hits"`) && !strings.Contains(body, `id="no-hits"`) {
			t.Fatalf("search %s: %d", q, code)
		}
	}
	u.recall(t, u.readKey, "wal")
	u.env.Svc.FlushSearchLog()
	rows, err := u.searchLog(u.adminKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Agent != "bob" || rows[0].Query != "wal" {
		t.Errorf("search log %+v, want only bob's recall of wal", rows)
	}
}
