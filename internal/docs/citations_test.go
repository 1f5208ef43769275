package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citationRE is a citation of a docs page by its path from the repository
// root, with an optional anchor: docs/architecture.md#invariant-3-read-your-writes.
// The character before "docs/" keeps paths such as internal/web/docs/x.md out.
var citationRE = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w./-]*\w\.md)(?:#([\p{L}\p{N}_-]+))?`)

// TestCitationsResolve: every docs/<page>.md#<anchor> named in a Go file
// (comments and strings alike) or a Markdown file names a page that exists
// and a heading of it that exists.
func TestCitationsResolve(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root, ".go", ".md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range citationRE.FindAllStringSubmatch(line, -1) {
				checked++
				if msg := checkCitation(root, m[1], m[2]); msg != "" {
					t.Errorf("%s:%d: %s", f, i+1, msg)
				}
			}
		}
	}
	t.Logf("%d citations in %d files", checked, len(files))
}

// checkCitation says what is wrong with a citation of page (relative to
// root) at anchor ("" for none), or "" when both exist.
func checkCitation(root, page, anchor string) string {
	abs := filepath.Join(root, filepath.FromSlash(page))
	anchors, ok := anchorsIn(abs)
	if !ok {
		return "cites " + page + ", which does not exist"
	}
	if anchor != "" && !anchors[anchor] {
		return "cites " + page + "#" + anchor + ", but " + page + " has no heading with that anchor"
	}
	return ""
}
