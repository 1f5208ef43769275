package cli

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"munin/internal/store"
)

// TestStdioRefusesDirWithoutData: stdio started by an MCP client from
// another working directory refuses the relative default instead of
// creating an empty ./data, and says how to point it at the real one.
func TestStdioRefusesDirWithoutData(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("MUNIN_KEY", "munin_whatever")
	err, out := run(t, "stdio")
	if err == nil {
		t.Fatalf("stdio without data started: %s", out)
	}
	for _, want := range []string{"./data", "holds no Munin data", "--data", "absolute path"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat("data"); err == nil {
		t.Error("stdio created ./data")
	}
}

// TestStdioBesideServer: the lock conflict names the process holding the
// directory and tells the user to use the server's /mcp instead.
func TestStdioBesideServer(t *testing.T) {
	dir := newDataDir(t)
	lock, err := store.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Unlock() })
	t.Setenv("MUNIN_KEY", "munin_whatever")
	err, out := run(t, "stdio", "--data", dir)
	if err == nil {
		t.Fatalf("stdio beside a holder of the lock started: %s", out)
	}
	for _, want := range []string{"in use by another munin process", "pid " + strconv.Itoa(os.Getpid()), "/mcp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestStdioKeyFlagWarns: --key shows the key to every user in ps, so it
// warns and recommends MUNIN_KEY; MUNIN_KEY alone does not warn.
func TestStdioKeyFlagWarns(t *testing.T) {
	missing := t.TempDir() + "/nothing-here" // fails after the warning, before serving
	t.Setenv("MUNIN_KEY", "")                // restored after the test
	os.Unsetenv("MUNIN_KEY")
	_, out := run(t, "stdio", "--data", missing, "--key", "munin_x")
	if !strings.Contains(out, "warning: --key is visible") || !strings.Contains(out, "MUNIN_KEY") {
		t.Errorf("--key gave no warning recommending MUNIN_KEY: %q", out)
	}
	t.Setenv("MUNIN_KEY", "munin_x")
	if _, out := run(t, "stdio", "--data", missing); strings.Contains(out, "warning") {
		t.Errorf("MUNIN_KEY warned: %q", out)
	}
}

// TestStdioRefusesServerAdminKey: a server-admin key reads no memory and
// stdio serves nothing else, so stdio refuses it at start and says which
// key to use instead.
func TestStdioRefusesServerAdminKey(t *testing.T) {
	dir := newDataDir(t)
	err, out := run(t, "key", "create", "--server-admin", "--agent", "ops", "--data", dir)
	token := regexp.MustCompile(`munin_[A-Za-z0-9_-]{43}`).FindString(out)
	if err != nil || token == "" {
		t.Fatalf("key create --server-admin: %v\n%s", err, out)
	}
	t.Setenv("MUNIN_KEY", token)
	err = refused(t, "stdio", "--data", dir)
	if err == nil {
		t.Fatal("stdio served a server-admin key")
	}
	for _, want := range []string{"server-admin key", "reads no memory", "project key", "MUNIN_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestStdioWithoutKey: stdio started without a key says how a stdio user
// gives one (MUNIN_KEY, --key), not the HTTP header a web client sends.
func TestStdioWithoutKey(t *testing.T) {
	dir := newDataDir(t)
	t.Setenv("MUNIN_KEY", "")
	os.Unsetenv("MUNIN_KEY")
	err, out := run(t, "stdio", "--data", dir)
	if err == nil {
		t.Fatalf("stdio without a key started: %s", out)
	}
	for _, want := range []string{"MUNIN_KEY", "--key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Authorization") {
		t.Errorf("error %q speaks of an HTTP header", err)
	}
}
