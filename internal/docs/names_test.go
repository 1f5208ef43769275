package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// testNameRE is a Go test, fuzz target or benchmark named in prose.
var testNameRE = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z0-9]\w*`)

// testFuncs returns the names of the top-level functions declared in the
// repository's _test.go files, whatever their build tags.
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range repoFiles(t, root, "_test.go") {
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				names[fn.Name.Name] = true
			}
		}
	}
	return names
}

// TestNamedTestsExist: every test, fuzz target and benchmark README.md or a
// docs page names (as the test that guards an invariant, or in a command) is
// declared somewhere in the repository, so a renamed or removed test cannot
// leave the docs pointing at nothing.
func TestNamedTestsExist(t *testing.T) {
	root := repoRoot(t)
	funcs := testFuncs(t, root)
	eachPageLine(t, root, func(page string, n int, line string) {
		for _, name := range testNameRE.FindAllString(line, -1) {
			if !funcs[name] {
				t.Errorf("%s:%d: names %s, which no _test.go file declares", page, n, name)
			}
		}
	})
}

// internalPathRE is a path into internal/ named in prose or a command, such
// as ./internal/search/... or `internal/store`; the last character is never
// "/" or ".", so a trailing "/..." or a full stop is left out. A URL path
// such as /internal/v1/call is not one: no "/" may come before "internal".
var internalPathRE = regexp.MustCompile(`(?:^|[^\w/.-])(?:\./)?(internal/[\w./-]*\w)`)

// TestNamedPathsExist: every internal/… path README.md or a docs page names
// (a package in a `go test` command, a file) exists, so a moved package
// cannot leave a command in the docs that no longer runs.
func TestNamedPathsExist(t *testing.T) {
	root := repoRoot(t)
	eachPageLine(t, root, func(page string, n int, line string) {
		for _, m := range internalPathRE.FindAllStringSubmatch(line, -1) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("%s:%d: names %s, which does not exist", page, n, m[1])
			}
		}
	})
}
