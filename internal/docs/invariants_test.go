package docs

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// invariantHeadingRE is the form of an invariant's heading in
// docs/architecture.md: "### Invariant <N>: <short name>".
var invariantHeadingRE = regexp.MustCompile(`^### Invariant ([1-9][0-9]*): \S`)

// invariantAnchors maps each invariant's number to its heading's anchor in
// docs/architecture.md.
func invariantAnchors(t *testing.T, root string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	lines, _ := prose(string(b))
	for _, line := range lines {
		m := invariantHeadingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		out[n] = slug(strings.TrimPrefix(line, "### "))
	}
	return out
}

// TestArchitectureStatesSevenInvariants: docs/architecture.md has the
// headings "### Invariant N: …" for N = 1..7 that code comments cite.
func TestArchitectureStatesSevenInvariants(t *testing.T) {
	a := invariantAnchors(t, repoRoot(t))
	for n := 1; n <= 7; n++ {
		if a[n] == "" {
			t.Errorf("docs/architecture.md has no heading \"### Invariant %d: <short name>\"", n)
		}
	}
	if len(a) != 7 {
		t.Errorf("docs/architecture.md states %d invariants, want 7: %v", len(a), a)
	}
}

// invariantMentionRE finds a mention of invariants by number in a comment:
// the word, in any case and singular or plural, then a number or a list of
// numbers joined by commas, "and", "or" or "&"; the numbers are in group 1.
var invariantMentionRE = regexp.MustCompile(`(?i)\binvariants?\s+([0-9]+(?:\s*(?:,|and|or|&)\s*[0-9]+)*)`)

// numberRE picks the numbers out of invariantMentionRE's group.
var numberRE = regexp.MustCompile(`[0-9]+`)

// TestInvariantCommentsCiteArchitecture: every Go comment (test files
// included) that names an invariant by number carries, in the same comment
// block, the citation docs/architecture.md#<anchor> of that invariant's
// heading, so that a reader of the code finds the invariant's statement and
// its tests in one click, and a renamed heading shows up here.
func TestInvariantCommentsCiteArchitecture(t *testing.T) {
	root := repoRoot(t)
	anchors := invariantAnchors(t, root)
	fset := token.NewFileSet()
	mentions := 0
	for _, f := range repoFiles(t, root, ".go") {
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, group := range file.Comments {
			// Text strips the comment markers, so a list of numbers
			// wrapped onto the next line is still one mention.
			block := group.Text()
			for _, m := range invariantMentionRE.FindAllStringSubmatch(block, -1) {
				for _, num := range numberRE.FindAllString(m[1], -1) {
					mentions++
					n, _ := strconv.Atoi(num)
					anchor, ok := anchors[n]
					pos := fset.Position(group.Pos())
					switch {
					case !ok:
						t.Errorf("%s:%d: %q names invariant %d, which docs/architecture.md does not state", f, pos.Line, m[0], n)
					case !strings.Contains(block, "docs/architecture.md#"+anchor):
						t.Errorf("%s:%d: %q without the citation docs/architecture.md#%s in the same comment", f, pos.Line, m[0], anchor)
					}
				}
			}
		}
	}
	t.Logf("%d mentions of an invariant in Go comments", mentions)
}
