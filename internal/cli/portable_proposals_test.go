package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportExportCountProposals: import prints how many proposals it
// read and wrote on a line of their own, export how many it wrote; a file
// without proposals prints what it printed before they existed.
func TestImportExportCountProposals(t *testing.T) {
	dir := t.TempDir()
	version := `{"slug":"a","version":1,"title":"t","content":"c","tags":[],"agent":"x","created_at":"2026-01-02T03:04:05Z","deleted":false}`
	proposal := `{"proposal":{"slug":"a","version":0,"title":"t","content":"c2","tags":[],"agent":"pia","created_at":"2026-01-02T03:04:06Z","deleted":false,"base_version":1,"state":"pending"}}`
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(version+"\n"+proposal+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err, out := run(t, "import", "w/p", in, "--data", dir)
	if err != nil || !strings.Contains(out, "w/p: 1 versions read, 1 imported, 0 already present\n") ||
		!strings.Contains(out, "w/p: 1 proposals read, 1 imported, 0 already present\n") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "out.jsonl")
	err, out = run(t, "export", "w/p", "--data", dir, "--out", file)
	if err != nil || !strings.Contains(out, "exported 1 versions and 1 proposals of w/p") {
		t.Fatalf("export: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != version+"\n"+proposal+"\n" {
		t.Fatalf("exported file %q, %v; want the imported lines", b, err)
	}

	if err := os.WriteFile(in, []byte(version+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err, out = run(t, "import", "w/q", in, "--data", dir)
	if err != nil || strings.Contains(out, "proposals") {
		t.Fatalf("import without proposals: %v\n%s", err, out)
	}
	if err, out = run(t, "export", "w/q", "--data", dir, "--out", file); err != nil || !strings.Contains(out, "exported 1 versions of w/q\n") {
		t.Fatalf("export without proposals: %v\n%s", err, out)
	}
}
