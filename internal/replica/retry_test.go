//go:build unix

package replica

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRestore is a stand-in for `litestream restore` whose first run leaves a
// partial file and fails the way a file vanishing under a compaction does;
// the next runs refuse an existing output (as litestream does) or succeed.
const fakeRestore = `#!/bin/sh
out=""
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
n=$(cat "$STATE" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE"
if [ $n -eq 1 ]; then echo partial > "$out"; echo "Error: open ltx file: no such file or directory" >&2; exit 1; fi
if [ -e "$out" ]; then echo "Error: output path already exists" >&2; exit 1; fi
echo restored > "$out"
echo '{"txid": "00000000000000ff", "duration_ms": 1}'
`

// A failed restore is cleaned up and retried; the retry's answer counts.
func TestRestoreRetries(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "litestream")
	if err := os.WriteFile(bin, []byte(fakeRestore), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "runs")
	t.Setenv("STATE", state)
	out := filepath.Join(dir, "out.db")
	txid, err := Restore(ctxT(t), bin, "file:///replica/ws/0000000000000001", out, RestoreOptions{Logger: testLogger(t)})
	if err != nil || txid != 0xff {
		t.Fatalf("restore = %d, %v", txid, err)
	}
	runs, _ := os.ReadFile(state)
	got, _ := os.ReadFile(out)
	if strings.TrimSpace(string(runs)) != "2" || strings.TrimSpace(string(got)) != "restored" {
		t.Fatalf("runs %q, output %q", runs, got)
	}
}
