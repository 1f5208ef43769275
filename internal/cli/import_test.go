package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportHintsKey: an import into a project no live key opens says on
// stderr how to create one (and creates no secret); once a key exists, the
// hint goes.
func TestImportHintsKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new data")
	line := `{"slug":"a","version":1,"title":"t","content":"c","tags":[],"agent":"x","created_at":"2026-01-02T03:04:05Z","deleted":false}` + "\n"
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	importIt := func() (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := Run([]string{"import", "w/p", in, "--data", dir}, &stdout, &stderr); err != nil {
			t.Fatalf("import: %v\n%s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	stdout, stderr := importIt()
	want := "munin key create --data '" + dir + "' --workspace w --project p --agent NAME --role write"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "w/p has no key") {
		t.Fatalf("stderr %q lacks the hint %q", stderr, want)
	}
	if strings.Contains(stdout+stderr, "munin_") {
		t.Fatalf("import created a key unasked:\n%s%s", stdout, stderr)
	}
	if err, out := run(t, "key", "create", "--data", dir, "--workspace", "w", "--project", "p", "--agent", "me"); err != nil {
		t.Fatalf("key create: %v %s", err, out)
	}
	if _, stderr := importIt(); strings.Contains(stderr, "key create") {
		t.Fatalf("hint with a live key: %q", stderr)
	}
}
