package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testNameRE is a Go test, fuzz target or benchmark named in prose.
var testNameRE = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z0-9]\w*`)

// testFuncs maps the names of the top-level functions declared in the
// repository's _test.go files, whatever their build tags, to the
// directories (relative to root, "." for the root) that declare them.
func testFuncs(t *testing.T, root string) map[string][]string {
	t.Helper()
	names := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range repoFiles(t, root, "_test.go") {
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				names[fn.Name.Name] = append(names[fn.Name.Name], path.Dir(f))
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
			if len(funcs[name]) == 0 {
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

// goTestRE is a `go test` command up to the end of its line or code span;
// pkgArgRE is one of its package arguments: ".", "./internal/x/" or
// "./internal/x/...".
var (
	goTestRE = regexp.MustCompile("go test[^`]*")
	pkgArgRE = regexp.MustCompile(`^\.(?:/[\w./-]*)?$`)
)

// TestCommandsNameTheirPackages: a `go test` command in README.md or a docs
// page that names a test, fuzz target or benchmark runs it, i.e. the
// function is declared in one of the packages the command names (or below
// one named with "/..."). A test that moves to another package breaks the
// command, and this test says which.
func TestCommandsNameTheirPackages(t *testing.T) {
	root := repoRoot(t)
	funcs := testFuncs(t, root)
	eachPageLine(t, root, func(page string, n int, line string) {
		for _, cmd := range goTestRE.FindAllString(line, -1) {
			var pkgs []string
			for _, arg := range strings.Fields(cmd) {
				if pkgArgRE.MatchString(arg) {
					pkgs = append(pkgs, arg)
				}
			}
			if len(pkgs) == 0 {
				continue
			}
			for _, name := range testNameRE.FindAllString(cmd, -1) {
				if !declaredIn(funcs[name], pkgs) {
					t.Errorf("%s:%d: %q runs %s, which none of %v declares (it is in %v)", page, n, cmd, name, pkgs, funcs[name])
				}
			}
		}
	})
}

// declaredIn reports whether one of dirs (as testFuncs gives them) is one
// of the packages pkgs names as go test arguments.
func declaredIn(dirs, pkgs []string) bool {
	for _, pkg := range pkgs {
		p, recursive := strings.CutSuffix(pkg, "/...")
		p = path.Clean(p)
		for _, d := range dirs {
			if d == p || (recursive && (p == "." || strings.HasPrefix(d, p+"/"))) {
				return true
			}
		}
	}
	return false
}
