package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/reqlog/logtest"
)

var servingLine = regexp.MustCompile(`msg="munin serving" mcp=(http://\S+)/mcp`)

// startServe runs munin serve on dir and a free loopback port; it returns
// the base URL, the server's log (stderr) and stop, which shuts the server
// down and waits for it (also run at the end of the test).
func startServe(t *testing.T, dir string, stdout io.Writer) (base string, log *logtest.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log = &logtest.Buffer{}
	done := make(chan error, 1)
	go func() { done <- serveUntil(ctx, []string{"--data", dir, "--addr", "127.0.0.1:0"}, stdout, log) }()
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		if m := servingLine.FindStringSubmatch(log.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve ended before serving: %v\n%s", err, log)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("serve did not come up within 30 s:\n%s", log)
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return base, log, stop
}

var fullKey = regexp.MustCompile(`munin_[A-Za-z0-9_-]{43}`)

// TestFirstKeysToFile: when stdout is no terminal (a
// systemd unit, a container: stdout is the log), the first start's keys
// are not printed but written to first-keys.txt, mode 0600, and the log
// names that file and shows no key.
func TestFirstKeysToFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var stdout logtest.Buffer
	_, log, stop := startServe(t, dir, &stdout)
	stop()
	if fullKey.MatchString(stdout.String()) || fullKey.MatchString(log.String()) {
		t.Fatalf("a key reached stdout or the log:\nstdout: %s\nlog: %s", stdout.String(), log)
	}
	path := filepath.Join(dir, firstKeysFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no key file: %v\nlog: %s", err, log)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %04o, want 0600", path, fi.Mode().Perm())
	}
	text, _ := os.ReadFile(path)
	if keys := fullKey.FindAllString(string(text), -1); len(keys) < 2 || !strings.Contains(string(text), "Server-admin key") {
		t.Errorf("key file holds %d keys:\n%s", len(keys), text)
	}
	abs, _ := filepath.Abs(path)
	if !strings.Contains(log.String(), "file="+abs) {
		t.Errorf("the log does not name %s:\n%s", abs, log)
	}
	// The second start creates no keys and leaves the file alone.
	os.Remove(path)
	_, log, _ = startServe(t, dir, &stdout)
	if _, err := os.Stat(path); err == nil || strings.Contains(log.String(), firstKeysFile) {
		t.Errorf("second start wrote keys again:\n%s", log)
	}
}

// TestFirstKeysOnTerminal: on a terminal the keys are printed, and no file
// is written.
func TestFirstKeysOnTerminal(t *testing.T) {
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = old })
	dir := filepath.Join(t.TempDir(), "data")
	var stdout logtest.Buffer
	startServe(t, dir, &stdout)
	if keys := fullKey.FindAllString(stdout.String(), -1); len(keys) < 2 {
		t.Errorf("terminal shows %d keys:\n%s", len(keys), stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, firstKeysFile)); err == nil {
		t.Error("a key file was written although the keys were shown")
	}
}

// TestDataDirMadePrivate: a data directory open to others (./data of a
// fresh clone is 0755) is made 0700 at start, and the log says so once.
func TestDataDirMadePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	_, log, stop := startServe(t, dir, io.Discard)
	stop()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory has mode %04o after start, want 0700", fi.Mode().Perm())
	}
	if !strings.Contains(log.String(), "made it private") || !strings.Contains(log.String(), "was=0755") {
		t.Errorf("the log does not say the mode was changed:\n%s", log)
	}
	_, log, _ = startServe(t, dir, io.Discard)
	if strings.Contains(log.String(), "made it private") {
		t.Errorf("second start changed the mode again:\n%s", log)
	}
}

// TestServeLogIsSafe: the request log of a real server shows neither a
// key's body however it is pasted into a path, nor a level token that a
// path with %0A would forge (grep-based alerts on level=ERROR).
func TestServeLogIsSafe(t *testing.T) {
	const body = "Zq3xV9kLmP2rT8wYbN4cH7jD1sF6gA0eQ5uI-o_KhWy"
	base, log, stop := startServe(t, filepath.Join(t.TempDir(), "data"), io.Discard)
	for _, path := range []string{"/x%0Alevel=ERROR%20msg=boom", "/w/" + body, "/w/munin-" + body, "/api/v1/entries/MUNIN%20" + body} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	stop()
	text := log.String()
	if strings.Count(text, "http request") < 4 {
		t.Fatalf("requests not logged:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("a line carries level=ERROR: %s", line)
		}
		if strings.Contains(line, body[:20]) {
			t.Errorf("a key body was logged: %s", line)
		}
	}
}

// TestWritePrivate: the key file is 0600 whatever was at its name — an old
// file open to others, or a symlink planted to send the keys elsewhere.
func TestWritePrivate(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(elsewhere, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{old, link, filepath.Join(dir, "new")} {
		if err := writePrivate(path, "keys"); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want a regular file of mode 0600", path, err, fi.Mode())
		}
		if b, _ := os.ReadFile(path); string(b) != "keys" {
			t.Errorf("%s holds %q", path, b)
		}
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "untouched" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}
