package web

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"munin/internal/memory"
	"munin/internal/service"
)

// formValues reads the fields of the form with this id from a page, as a
// browser would submit them unchanged.
func formValues(t *testing.T, page, id string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	var form *html.Node
	var find func(n *html.Node)
	find = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "form" && attr(n, "id") == id {
			form = n
		}
		for c := n.FirstChild; c != nil && form == nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if form == nil {
		t.Fatalf("no form #%s on the page:\n%s", id, page)
	}
	v := url.Values{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "input":
				v.Set(attr(n, "name"), attr(n, "value"))
			case "textarea":
				var b strings.Builder
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					b.WriteString(c.Data)
				}
				v.Set(attr(n, "name"), b.String())
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(form)
	return v
}

// TestEditRederivesTitle: a title derived from the first line follows the
// first line when a person edits the content; a title a person set stays.
func TestEditRederivesTitle(t *testing.T) {
	u := newUI(t)
	ctx := context.Background()
	u.remember(t, u.writerKey, "notes/derived", "# Old heading\n\nbody")
	if _, err := u.env.Svc.Remember(ctx, memory.NewCaller(u.writerKey), service.RememberRequest{Slug: "notes/set", Title: "Chosen by a person", Content: "# Old heading\n\nbody"}); err != nil {
		t.Fatal(err)
	}
	b := u.signIn(t, u.writer)
	for slug, want := range map[string]string{"notes/derived": "New heading", "notes/set": "Chosen by a person"} {
		code, page := b.get(projPath + "/edit/" + slug)
		if code != http.StatusOK {
			t.Fatalf("edit form of %s: %d", slug, code)
		}
		form := formValues(t, page, "edit-form")
		form.Set("content", "# New heading\n\nbody")
		if code, body := b.post(projPath+"/save", form); code != http.StatusSeeOther {
			t.Fatalf("save %s: %d\n%s", slug, code, body)
		}
		got, err := u.get(u.writerKey, slug)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != want || got.Version != 2 {
			t.Errorf("%s after editing the first line: title %q (version %d), want %q", slug, got.Title, got.Version, want)
		}
	}
	// The form shows the derived title as a placeholder, not as a value.
	_, page := b.get(projPath + "/edit/notes/derived")
	if !strings.Contains(page, `name="title" value="" maxlength="512" placeholder="New heading"`) {
		t.Errorf("the edit form does not offer the derived title as a placeholder:\n%s", page)
	}
}

// TestFavicon: /favicon.ico is a real icon, the layout links an SVG icon
// that is served, both are cached long and need no session.
func TestFavicon(t *testing.T) {
	u := newUI(t)
	b := u.browser(t) // not signed in
	resp, ico := b.do("GET", "/favicon.ico", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("/favicon.ico: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if cc := resp.Header.Get("Cache-Control"); cc != iconCache {
		t.Errorf("/favicon.ico Cache-Control %q, want %q", cc, iconCache)
	}
	// ICONDIR (reserved 0, type 1, one image), one entry whose PNG is 32×32.
	var hdr struct {
		Reserved, Type, Count uint16
		W, H, Colors, _       uint8
		Planes, Bits          uint16
		Size, Offset          uint32
	}
	if err := binary.Read(bytes.NewReader([]byte(ico)), binary.LittleEndian, &hdr); err != nil {
		t.Fatalf("ICO header: %v", err)
	}
	if hdr.Reserved != 0 || hdr.Type != 1 || hdr.Count != 1 || int(hdr.Offset)+int(hdr.Size) != len(ico) {
		t.Fatalf("not an ICO file: %+v, %d bytes", hdr, len(ico))
	}
	img, err := png.Decode(strings.NewReader(ico[hdr.Offset:]))
	if err != nil || img.Bounds().Dx() != 32 || img.Bounds().Dy() != 32 {
		t.Fatalf("the icon's image: %v, %v", img.Bounds(), err)
	}
	if resp, body := b.do("HEAD", "/favicon.ico", nil); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /favicon.ico: %d, %d bytes", resp.StatusCode, len(body))
	}

	_, page := b.get("/")
	m := iconLinkRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the sign-in page links no icon:\n%s", page)
	}
	resp, svg := b.do("GET", m[1], nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || resp.Header.Get("Cache-Control") != iconCache {
		t.Fatalf("%s: %d %q %q", m[1], resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal([]byte(svg), &root); err != nil || root.XMLName.Local != "svg" {
		t.Errorf("%s is not SVG: %v %v", m[1], root.XMLName, err)
	}
}

var iconLinkRe = regexp.MustCompile(`<link rel="icon" href="([^"]+)" type="image/svg\+xml">`)
