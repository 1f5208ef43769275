package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"munin/internal/app"
)

// run runs a command line and returns its error and output.
func run(t *testing.T, args ...string) (error, string) {
	t.Helper()
	var out bytes.Buffer
	err := Run(args, &out, &out)
	return err, out.String()
}

// refused runs a serve command line that must fail before it serves. If it
// serves instead, the test fails after a while rather than hanging.
func refused(t *testing.T, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		err, _ := run(t, args...)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%v started serving instead of refusing", args)
		return nil
	}
}

// newDataDir makes a data directory holding project w/p with one entry.
func newDataDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err, out := run(t, "key", "create", "--data", dir, "--workspace", "w", "--project", "p", "--agent", "a"); err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	return dir
}

func TestEnvValuesAreParsedOrRefused(t *testing.T) {
	for name, value := range map[string]string{
		"MUNIN_BUDGET_OFF":       "yes",
		"MUNIN_WRITE_BUDGET":     "2k",
		"MUNIN_SESSION_IDLE_TTL": "45",
		"MUNIN_MAX_INFLIGHT":     "abc",
		"MUNIN_MAX_SESSIONS":     "many",

		"MUNIN_WRITE_BUDGET_BYTES": "16MiB",
		"MUNIN_INDEX_WAIT":         "10",
		"MUNIN_INDEX_IDLE":         "10",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			err := refused(t, "serve", "--data", filepath.Join(t.TempDir(), "d"), "--addr", "127.0.0.1:0")
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("serve with %s=%q: %v, want an error naming the variable", name, value, err)
			}
		})
	}
}

func TestEnvFillsFlagsNotGiven(t *testing.T) {
	t.Setenv("MUNIN_WRITE_BUDGET", "7")
	t.Setenv("MUNIN_MAX_INFLIGHT", "9")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	budget := fs.Int("write-budget", 1000, "")
	inflight := fs.Int("max-inflight", 64, "")
	agent := fs.String("agent", "", "") // has no environment variable
	t.Setenv("MUNIN_AGENT", "not-me")
	if _, err := parseInterspersed(fs, []string{"--max-inflight", "3"}); err != nil {
		t.Fatal(err)
	}
	if *budget != 7 || *inflight != 3 || *agent != "" {
		t.Fatalf("write-budget %d (want 7 from env), max-inflight %d (want 3: the flag wins), agent %q (want empty)", *budget, *inflight, *agent)
	}
}

func TestSettingsThatCannotWorkAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--write-budget", "-5"},
		{"--write-budget-bytes", "-1"},
		{"--index-wait", "-1s"},
		{"--index-idle", "-1m"},
		{"--max-content", "-1"},
		{"--max-content", "4000000"}, // larger than the 1 MiB request body cap
		{"--allowed-origins", "ftp://x.example"},
		{"--max-sessions", "-1"},
		{"--max-sessions-per-key", "-64"},
		{"--max-streams-per-key", "-8"},
	} {
		err := refused(t, append([]string{"serve", "--data", filepath.Join(t.TempDir(), "d"), "--addr", "127.0.0.1:0"}, args...)...)
		if err == nil {
			t.Errorf("serve %v started", args)
		}
	}
}

func TestExtraArgumentsAreRefused(t *testing.T) {
	dir := newDataDir(t)
	for _, args := range [][]string{
		{"serve", "extra"},
		{"stdio", "extra"},
		{"project", "list", "extra"},
		{"key", "list", "extra"},
		{"key", "revoke"},
		{"export", "w/p", "w/q"},
		{"reindex", "w/p", "w/q"},
	} {
		if err, _ := run(t, append(args, "--data", dir)...); err == nil || !strings.Contains(err.Error(), "argument") {
			t.Errorf("%v: %v, want an error about the arguments", args, err)
		}
	}
}

// TestReadOnlyCommandsNeedData: a mistyped --data is an error, and no empty
// data directory appears.
func TestReadOnlyCommandsNeedData(t *testing.T) {
	t.Chdir(t.TempDir())
	typo := "typo"
	for _, args := range [][]string{
		{"key", "list", "--data", typo},
		{"key", "revoke", "1", "--data", typo},
		{"project", "list", "--data", typo},
		{"export", "w/p", "--data", typo},
		{"reindex", "--data", typo},
		{"key", "--data", typo, "list"}, // the subcommand must come first
	} {
		if err, _ := run(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
	for _, dir := range []string{typo, "data"} {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("a read-only command created %s", dir)
		}
	}
}

// TestFailedExportKeepsOutFile: --out is replaced only by a complete export.
func TestFailedExportKeepsOutFile(t *testing.T) {
	dir := newDataDir(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(out, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err, _ := run(t, "export", "w/nope", "--data", dir, "--out", out); err == nil {
		t.Fatal("export of a missing project succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != "precious\n" {
		t.Fatalf("a failed export changed --out to %q", b)
	}
	line := `{"slug":"a","version":1,"title":"t","content":"c","tags":[],"agent":"x","created_at":"2026-01-02T03:04:05Z","deleted":false}` + "\n"
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err, msg := run(t, "import", "w/p", in, "--data", dir); err != nil {
		t.Fatalf("import: %v %s", err, msg)
	}
	if err, msg := run(t, "export", "w/p", "--data", dir, "--out", out); err != nil {
		t.Fatalf("export: %v %s", err, msg)
	}
	if b, _ := os.ReadFile(out); string(b) != line {
		t.Fatalf("export wrote %q, want %q", b, line)
	}
	// --out naming a directory: the rename fails, and the partial file goes.
	if err, _ := run(t, "export", "w/p", "--data", dir, "--out", filepath.Dir(out)); err == nil {
		t.Fatal("export onto a directory succeeded")
	}
	for _, d := range []string{filepath.Dir(out), filepath.Dir(filepath.Dir(out))} {
		if left, _ := filepath.Glob(filepath.Join(d, ".*partial*")); len(left) != 0 {
			t.Fatalf("partial files left behind: %v", left)
		}
	}
}

// TestExportToNonRegularFile: a FIFO (or /dev/stdout, or a shell's >(…))
// is written to directly, not replaced by a renamed regular file.
func TestExportToNonRegularFile(t *testing.T) {
	dir := newDataDir(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the export opens the FIFO
		got <- string(b)
	}()
	if err, msg := run(t, "export", "w/p", "--data", dir, "--out", fifo); err != nil {
		t.Fatalf("export to a FIFO: %v %s", err, msg)
	}
	<-got
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}

// TestServerAdminKeyFromTheCommandLine: only `key create --server-admin`
// makes a server-admin key; `key list` shows it without a project.
func TestServerAdminKeyFromTheCommandLine(t *testing.T) {
	dir := newDataDir(t)
	err, out := run(t, "key", "create", "--server-admin", "--agent", "ops", "--data", dir)
	if err != nil || !strings.Contains(out, "server-admin key") || !regexp.MustCompile(`munin_[A-Za-z0-9_-]{43}`).MatchString(out) {
		t.Fatalf("key create --server-admin: %v\n%s", err, out)
	}
	err, out = run(t, "key", "list", "--data", dir)
	if err != nil || !regexp.MustCompile(`(?m)^[1-9][0-9]*\s+server\s+ops\s+server-admin\s`).MatchString(out) {
		t.Fatalf("key list does not show the server-admin key clearly: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"key", "create", "--role", "server-admin", "--agent", "x"},
		{"key", "create", "--server-admin", "--agent", "x", "--workspace", "w"},
		{"key", "create", "--server-admin", "--agent", "x", "--role", "admin"},
		{"key", "create", "--server-admin"},
		{"key", "list", "--server-admin"},
	} {
		if err, out := run(t, append(args, "--data", dir)...); err == nil {
			t.Errorf("%v succeeded:\n%s", args, out)
		}
	}
	if _, out := run(t, "key", "list", "--data", dir); strings.Count(out, "server-admin") != 1 {
		t.Errorf("refused commands made server-admin keys:\n%s", out)
	}
}

// TestSynchronousDefaultsToFull: a server started without --synchronous
// fsyncs every commit (FULL), so an acknowledged write survives a power cut;
// NORMAL is the operator's explicit choice (flag or MUNIN_SYNCHRONOUS).
func TestSynchronousDefaultsToFull(t *testing.T) {
	t.Setenv("MUNIN_SYNCHRONOUS", "")
	os.Unsetenv("MUNIN_SYNCHRONOUS")
	for _, cmd := range []string{"serve", "stdio", "import", "reindex"} {
		var cfg app.Config
		if err := parseNoArgs(newFlags(cmd, &cfg), nil); err != nil {
			t.Fatal(err)
		}
		if cfg.Storage.Synchronous != "FULL" {
			t.Errorf("%s: synchronous %q by default, want FULL", cmd, cfg.Storage.Synchronous)
		}
	}
	t.Setenv("MUNIN_SYNCHRONOUS", "NORMAL")
	var cfg app.Config
	if err := parseNoArgs(newFlags("serve", &cfg), nil); err != nil || cfg.Storage.Synchronous != "NORMAL" {
		t.Fatalf("MUNIN_SYNCHRONOUS=NORMAL: %q, %v", cfg.Storage.Synchronous, err)
	}
}
