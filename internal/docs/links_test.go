package docs

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLinkRE is an inline Markdown link or image: [text](target "title").
var mdLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)

// schemeRE marks an absolute URL (http:, mailto:, …), which is not checked.
var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// TestRelativeLinks: every relative link in README.md and docs/*.md points
// at a file or directory that exists, and a link with "#anchor" into a
// Markdown file at a heading that exists there.
func TestRelativeLinks(t *testing.T) {
	root := repoRoot(t)
	for _, page := range docPages(t, root) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := prose(string(b))
		for i, line := range lines {
			line = codeSpanRE.ReplaceAllString(line, "")
			for _, m := range mdLinkRE.FindAllStringSubmatch(line, -1) {
				if msg := checkLink(root, page, m[1]); msg != "" {
					t.Errorf("%s:%d: link %q: %s", page, numbers[i], m[1], msg)
				}
			}
		}
	}
}

// checkLink resolves target as a link from page (both relative to root) and
// says what is wrong with it, or "" when it is fine or not relative.
func checkLink(root, page, target string) string {
	if target == "" {
		return "empty target"
	}
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(file)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	if p == "" {
		p = page // "#anchor" points into the page itself
	} else {
		p = path.Join(path.Dir(page), p)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "points outside the repository"
	}
	abs := filepath.Join(root, filepath.FromSlash(p))
	if _, err := os.Stat(abs); err != nil {
		return "no such file " + p
	}
	if anchor == "" || !strings.HasSuffix(p, ".md") {
		return ""
	}
	anchors, ok := anchorsIn(abs)
	if !ok {
		return "cannot read " + p
	}
	if !anchors[anchor] {
		return "no heading with anchor #" + anchor + " in " + p
	}
	return ""
}
