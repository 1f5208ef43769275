package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"munin/internal/search"
)

// migrationCount counts a schema's numbered migration files: the schema
// version munin version prints must be the newest of them.
func migrationCount(t *testing.T, kind string) int {
	t.Helper()
	files, err := os.ReadDir("../store/migrations/" + kind)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".sql") {
			n++
		}
	}
	return n
}

// TestVersion: munin version names the Go version, both schemas at their
// newest migration, and the search index format.
func TestVersion(t *testing.T) {
	err, out := run(t, "version")
	if err != nil {
		t.Fatalf("munin version: %v\n%s", err, out)
	}
	for _, want := range []string{
		"munin ", runtime.Version(),
		fmt.Sprintf("control/%d", migrationCount(t, "control")),
		fmt.Sprintf("workspace/%d", migrationCount(t, "workspace")),
		fmt.Sprintf("index format  %d", search.IndexFormat),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("munin version does not say %q:\n%s", want, out)
		}
	}
	if err, _ := run(t, "version", "extra"); err == nil {
		t.Error("munin version extra: accepted")
	}
}
