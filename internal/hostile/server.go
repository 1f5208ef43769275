//go:build hostile

// The server under attack: the real binary as a child process on a free
// loopback port, its keys made with the command line before it starts.

package hostile

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // reads the attacker's file size
)

// child is the running server.
type child struct {
	cmd    *exec.Cmd
	base   string        // http://127.0.0.1:port
	exited chan struct{} // closed when the process has ended
	log    string        // its stderr, kept for a failing run
}

// buildBinary builds munin from the module root into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("module root: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "munin")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// cleanEnv is the test's environment without MUNIN_* variables and GOGC,
// so that the server runs as shipped: the defaults of its flags and its own
// GC setting (which liveFromGoal relies on).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MUNIN_") && !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	return env
}

var tokenLine = regexp.MustCompile(`(?m)^\s*(munin_[A-Za-z0-9_-]+)\s*$`)

// createKey runs `munin key create` on the stopped data directory and
// returns the token it prints.
func createKey(t *testing.T, bin, data, workspace, project, agent, role string) string {
	t.Helper()
	return cliToken(t, bin, "key", "create", "--data", data, "--workspace", workspace,
		"--project", project, "--agent", agent, "--role", role)
}

// cliToken runs the binary with args and returns the one token it printed.
func cliToken(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("munin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := tokenLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("munin %s printed no key:\n%s", strings.Join(args, " "), out)
	}
	return string(m[1])
}

// metricsKey makes the key that may read /metrics: a server-admin key, which
// only the command line creates.
func metricsKey(t *testing.T, bin, data string) string {
	t.Helper()
	return cliToken(t, bin, "key", "create", "--data", data, "--server-admin", "--agent", "messung")
}

// startChild runs `munin serve` on a free loopback port with the default
// flags (budgets, admission, session TTL as shipped) and waits until it
// answers /healthz. A t.Cleanup kills it if the test did not stop it.
func startChild(t *testing.T, bin, data string) *child {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// With a public URL the OAuth endpoints are on, for attack 16 (loopback
	// http is accepted as a public URL for tests).
	args := []string{"serve", "--data", data, "--addr", addr, "--public-url", "http://" + addr}
	args = append(args, strings.Fields(*feindServerflag)...)
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	c := &child{cmd: cmd, base: "http://" + addr, exited: make(chan struct{}), log: filepath.Join(t.TempDir(), "server.log")}
	logFile, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); logFile.Close(); close(c.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exited })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c.healthy() {
			return c
		}
		if c.gone() {
			t.Fatalf("server ended at start; log in %s", c.log)
		}
	}
	t.Fatal("server did not come up within 30 s")
	return nil
}

// logTail returns the last n lines of the server's log that are not
// request lines (the tables count those), for a failing run.
func (c *child) logTail(n int) string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return err.Error()
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(line, `msg="http request"`) {
			keep = append(keep, line)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	for i, line := range keep {
		if len(line) > 300 {
			keep[i] = line[:300] + " …"
		}
	}
	return strings.Join(keep, "\n")
}

// gone tells whether the process has ended.
func (c *child) gone() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// healthy tells whether /healthz answers 200.
func (c *child) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends SIGTERM and waits for the drain; after 30 s it kills the
// server and reports false.
func (c *child) stop() bool {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return true
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return false
	}
}

// rss is the server's resident memory from /proc (0 where there is none).
func (c *child) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// cpu is the server's CPU time so far (user and system) from /proc, 0
// where there is none. The kernel counts in ticks of 1/100 s (USER_HZ).
func (c *child) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// fileSize is the size of a workspace file with its WAL.
func fileSize(data, workspace string) int64 {
	var n int64
	for _, suffix := range []string{".db", ".db-wal"} {
		if fi, err := os.Stat(filepath.Join(data, workspace+suffix)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// pageBytes is the logical size of a workspace file (page_count ×
// page_size) as a reader sees it, WAL included: what the file will take
// after a checkpoint, without the noise of a WAL that is reused rather than
// shrunk.
func pageBytes(data, workspace string) (int64, error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, workspace+".db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var pages, size int64
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		return 0, fmt.Errorf("page_count of %s: %w", workspace, err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		return 0, fmt.Errorf("page_size of %s: %w", workspace, err)
	}
	return pages * size, nil
}
