package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// repoRoot is the directory holding go.mod, found by walking up from the
// package directory the test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
	t.Fatal("no go.mod above the test's directory")
	return ""
}

// docPages are README.md and every Markdown page under docs/, relative to
// the repository root: the pages a newcomer reads.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

var (
	fenceRE    = regexp.MustCompile("^ {0,3}(```|~~~)")
	headingRE  = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTagRE  = regexp.MustCompile(`<[^>]+>`)
	htmlIDRE   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// prose returns the lines of a Markdown file outside fenced code blocks,
// each with its 1-based line number; lines inside fences are left out, since
// neither headings nor links are recognised there.
func prose(text string) (lines []string, numbers []int) {
	in := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case in == "":
				in = m[1]
			case in == m[1]:
				in = ""
			}
			continue
		}
		if in == "" {
			lines = append(lines, line)
			numbers = append(numbers, n)
		}
	}
	return lines, numbers
}

// slug is GitHub's anchor for a heading: the rendered text in lower case,
// every character but letters, marks, digits, connector punctuation ("_"),
// "-" and spaces dropped, each space turned into "-".
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTagRE.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.In(r, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchorsOf returns the heading anchors of a Markdown file as GitHub makes
// them (a repeated heading gets "-1", "-2", …), plus explicit <a id>/<a name>
// anchors.
func anchorsOf(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(text)
	for _, line := range lines {
		for _, m := range htmlIDRE.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			anchors[s+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

// eachPageLine calls fn with every line of README.md and the docs pages,
// code blocks included (commands live there), numbered from 1.
func eachPageLine(t *testing.T, root string, fn func(page string, n int, line string)) {
	t.Helper()
	for _, page := range docPages(t, root) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			fn(page, i+1, line)
		}
	}
}

// anchorCache reads each Markdown file's anchors once per test binary.
var anchorCache sync.Map // absolute path → map[string]bool

// anchorsIn returns the anchors of the Markdown file at path (absolute), or
// nil and false when the file cannot be read.
func anchorsIn(path string) (map[string]bool, bool) {
	if a, ok := anchorCache.Load(path); ok {
		return a.(map[string]bool), true
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	a := anchorsOf(string(b))
	anchorCache.Store(path, a)
	return a, true
}

// skipDirs are directories whose files are not the project's own prose or
// code: git's store, vendored or generated trees, test fixtures, data.
var skipDirs = map[string]bool{".git": true, "vendor": true, "node_modules": true, "testdata": true, "data": true}

// repoFiles lists the files under root whose names end in one of exts,
// relative to root with forward slashes, outside skipDirs and hidden
// directories.
func repoFiles(t *testing.T, root string, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(p, ext) {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSlugAsGitHub pins slug to the anchors GitHub gives these headings, so
// that the link checks agree with what a reader's click finds.
func TestSlugAsGitHub(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Invariant 3: read-your-writes", "invariant-3-read-your-writes"},
		{"Remember — `POST /api/v1/entries`", "remember--post-apiv1entries"},
		{"Write budget — `PUT /api/v1/project/budget` (admin key of the project)", "write-budget--put-apiv1projectbudget-admin-key-of-the-project"},
		{"Limits and what one project can cost", "limits-and-what-one-project-can-cost"},
		{"Search-log retention", "search-log-retention"},
		{"The [web UI](web-ui.md) in brief", "the-web-ui-in-brief"},
		{"Größe & Übersicht", "größe--übersicht"},
		{"snake_case stays", "snake_case-stays"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	a := anchorsOf("# A\n## Notes\n```\n## Not a heading\n```\n## Notes\n")
	for _, want := range []string{"a", "notes", "notes-1"} {
		if !a[want] {
			t.Errorf("anchorsOf: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchorsOf took a line in a code fence for a heading")
	}
}
