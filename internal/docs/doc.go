// Package docs holds no code, only tests that keep Munin's documentation
// true: README.md and the pages under docs/ link only to files and headings
// that exist, README.md stays short enough to read, the tests the pages name
// exist, and every Go comment that cites an invariant by number points at
// that invariant's heading in docs/architecture.md.
//
// The checks read the repository's files directly (found by walking up to
// go.mod), so they run with `go test ./internal/docs/` and need nothing
// built. They live here rather than beside the code because they guard the
// whole tree, not one package.
package docs
