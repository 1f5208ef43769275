//go:build cluster

// The Munin processes: the binary built once, cluster nodes started with
// the flags of `munin serve --cluster` (each in its own process group with
// its litestream child), a single node for the comparison, and keys made
// with `munin key create`.

package clustertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// upWait bounds how long a started node may take to answer /healthz.
const upWait = time.Minute

// serveLimitsOff are the serve flags both the cluster and the single node
// run with: the test measures durability and speed, not the limits that
// protect keys from each other.
var serveLimitsOff = []string{"--budget-off", "--rate-per-key=-1", "--max-inflight-per-key=-1", "--max-inflight=-1", "--recall-rate=-1", "--recall-concurrency=-1"}

// buildMunin builds this module's binary into a temp directory, or returns
// -cluster.munin.
func buildMunin(tb testing.TB) string {
	if *clusterMunin != "" {
		return *clusterMunin
	}
	bin := filepath.Join(tb.TempDir(), "munin")
	if out, err := exec.Command("go", "build", "-o", bin, "munin").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// findLitestream finds the litestream binary as the replica package does:
// $MUNIN_LITESTREAM, litestream on PATH, $(go env GOPATH)/bin/litestream.
// Without it the test skips, unless MUNIN_REQUIRE_LITESTREAM=1 (CI).
func findLitestream(tb testing.TB) string {
	if p := os.Getenv("MUNIN_LITESTREAM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("litestream"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "litestream")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "litestream nicht gefunden; installieren mit: GOBIN=$(go env GOPATH)/bin go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18"
	if os.Getenv("MUNIN_REQUIRE_LITESTREAM") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// node is one Munin process at a fixed address; a restart keeps the
// address and takes a fresh, empty data directory.
type node struct {
	name    string // n0, n1, …
	addr    string // 127.0.0.1:port
	args    func(dataDir string) []string
	env     []string
	bin     string
	logDir  string
	starts  int
	p       *proc
	dataDir string
}

// advertise is the node's URL as the cluster knows it.
func (n *node) advertise() string { return "http://" + n.addr }

// mcpURL is where agents reach the node's MCP endpoint.
func (n *node) mcpURL() string { return n.advertise() + "/mcp" }

// clusterNode describes node i of a cluster on etcd endpoints with a file
// replica under replicaDir.
func clusterNode(tb testing.TB, i int, bin, litestream, secret string, endpoints []string, replicaDir, logDir string) *node {
	n := &node{name: fmt.Sprintf("n%d", i), addr: fmt.Sprintf("127.0.0.1:%d", freePort(tb)), bin: bin, logDir: logDir,
		env: []string{"MUNIN_CLUSTER_SECRET=" + secret}}
	n.args = func(dataDir string) []string {
		return append([]string{"serve", "--cluster", "--data", dataDir, "--addr", n.addr, "--advertise", n.advertise(),
			"--etcd", strings.Join(endpoints, ","), "--replica", "file://" + replicaDir,
			"--lease-ttl", clusterTTL.String(), "--replication", *clusterModus, "--litestream", litestream}, serveLimitsOff...)
	}
	return n
}

// singleNode describes a plain `munin serve` on dataDir (keys made before).
func singleNode(tb testing.TB, bin, dataDir, logDir string) *node {
	n := &node{name: "einzeln", addr: fmt.Sprintf("127.0.0.1:%d", freePort(tb)), bin: bin, logDir: logDir}
	n.args = func(string) []string {
		return append([]string{"serve", "--data", dataDir, "--addr", n.addr}, serveLimitsOff...)
	}
	n.dataDir = dataDir
	return n
}

// start runs the node (a cluster node on a new empty data directory) and
// waits until /healthz answers 200; it returns how long that took.
func (n *node) start(tb testing.TB) (time.Duration, error) {
	n.starts++
	if n.env != nil { // a cluster node: always empty
		n.dataDir = filepath.Join(tb.TempDir(), "data")
	}
	logPath := filepath.Join(n.logDir, fmt.Sprintf("%s-%02d.log", n.name, n.starts))
	begin := time.Now()
	p, err := startProc(tb, logPath, n.env, n.bin, n.args(n.dataDir)...)
	if err != nil {
		return 0, err
	}
	n.p = p
	if err := waitHealthy(n.advertise(), p, begin.Add(upWait)); err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", n.name, err, p.logTail(3000))
	}
	return time.Since(begin), nil
}

// waitHealthy polls GET /healthz until 200, the process's end or deadline.
func waitHealthy(base string, p *proc, deadline time.Time) error {
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("ended while starting: %s", p.cmd.ProcessState)
		}
		if resp, err := hc.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("/healthz not 200 within %s", upWait)
}

// readyz returns the status of GET /readyz, 0 if there is no answer.
func readyz(base string) int {
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// createKey runs `munin key create` with where (--etcd … or --data …) and
// returns the token, the last line of its output.
func createKey(ctx context.Context, bin string, env, where []string, workspace, project, agent, role string) (string, error) {
	return keyCreate(ctx, bin, env, append(append([]string{}, where...), "--workspace", workspace, "--project", project, "--agent", agent, "--role", role))
}

// keyCreate runs `munin key create` with args and returns the token.
func keyCreate(ctx context.Context, bin string, env, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args = append([]string{"key", "create"}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("munin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return parseToken(string(out))
}

// parseToken takes the token from key create's output: "key N for A in W/P
// (role) — shown only once:" and the token alone on the next line.
func parseToken(out string) (string, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(lines) < 2 || !strings.HasPrefix(last, "munin_") || strings.ContainsAny(last, " \t") {
		return "", fmt.Errorf("no key in the output of key create: %q", out)
	}
	return last, nil
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
