package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// maxReadme is the most README.md may weigh: a newcomer reads it top to
// bottom, and everything else lives in docs/.
const maxReadme = 15 * 1024

// TestReadmeIsShort keeps README.md at most 15 KiB.
func TestReadmeIsShort(t *testing.T) {
	fi, err := os.Stat(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxReadme {
		t.Errorf("README.md has %d bytes, more than %d: move detail into docs/ and link it", fi.Size(), maxReadme)
	}
}

// TestReadmeKeepsItsCommands: the two commands a newcomer types first stay
// in README.md's code blocks, as written.
func TestReadmeKeepsItsCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"go run .", "go test ./..."} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmd) + `(\s|$)`).Match(b) {
			t.Errorf("README.md has no line starting with %q", cmd)
		}
	}
}
