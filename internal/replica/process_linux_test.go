package replica

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a stand-in for Munin: it starts a
// sidecar in the given directory, prints the sidecar's pid and waits.
const helperEnv = "MUNIN_REPLICA_TEST_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		s, err := Start(context.Background(), Options{Dir: dir})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("pid", s.PID())
		time.Sleep(time.Minute) // killed by the test long before
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// kill -9 of Munin takes its sidecar with it (Pdeathsig): no orphaned
// replicator keeps writing after the node is gone.
func TestSidecarDiesWithMunin(t *testing.T) {
	bin := requireBinary(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir(), "MUNIN_LITESTREAM="+bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if gone(pid) {
		t.Fatalf("sidecar %d is not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid)
}

// The sidecar does not inherit Munin's own settings (the cluster secret),
// but does get the rest (AWS_* credentials for an S3 replica).
func TestSidecarEnvironment(t *testing.T) {
	t.Setenv("MUNIN_CLUSTER_SECRET", "s3cret-value")
	t.Setenv("AWS_ACCESS_KEY_ID", "replica-key")
	sc := startSidecar(t, Options{})
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", sc.PID()))
	if err != nil {
		t.Fatal(err)
	}
	env := "\x00" + string(b)
	if strings.Contains(env, "s3cret-value") || strings.Contains(env, "\x00MUNIN_") {
		t.Error("the sidecar's environment holds MUNIN_* variables")
	}
	if !strings.Contains(env, "\x00AWS_ACCESS_KEY_ID=replica-key\x00") {
		t.Error("the sidecar's environment lacks AWS_ACCESS_KEY_ID")
	}
}
