//go:build cluster

// Child processes in their own process group: a Munin node and the
// `litestream replicate` it starts share one group, so a kill -9 of the
// group takes the node and its replicator down together, as a machine's
// death would. Every wait here is bounded.

package clustertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds of the waits for a process to end.
const (
	exitWait  = 10 * time.Second // the group leader after SIGKILL
	groupWait = 5 * time.Second  // the rest of the group after the leader
	stopWait  = 30 * time.Second // a graceful end after SIGTERM
)

// proc is a running child process that leads its own process group.
type proc struct {
	cmd  *exec.Cmd
	pgid int
	log  string
	done chan struct{} // closed when the leader was reaped
}

// startProc starts bin with args and env (added to the test's environment)
// in a new process group, its output going to logPath, and registers a kill
// of the whole group with tb.Cleanup.
func startProc(tb testing.TB, logPath string, env []string, bin string, args ...string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &proc{cmd: cmd, pgid: cmd.Process.Pid, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() { p.kill() })
	return p, nil
}

// exited reports whether the leader has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitWithin waits at most d for the leader to end by itself and returns
// its exit status (ok false: still running).
func (p *proc) exitWithin(d time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(d):
		return 0, false
	}
}

// kill sends SIGKILL to the whole group and waits until the leader is
// reaped and no other member is left (zombies aside: they are dead and
// belong to whoever adopted them).
func (p *proc) kill() error {
	if err := syscall.Kill(-p.pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill -9 group %d: %w", p.pgid, err)
	}
	select {
	case <-p.done:
	case <-time.After(exitWait):
		return fmt.Errorf("process %d still there %s after SIGKILL", p.pgid, exitWait)
	}
	return waitGroupEmpty(p.pgid, groupWait)
}

// stop asks the leader to end with SIGTERM (it stops its own children) and
// waits at most stopWait; then it kills what is left of the group. The
// error says whether the end was clean.
func (p *proc) stop() error {
	if p.exited() {
		return fmt.Errorf("process %d had already ended: %s", p.pgid, p.cmd.ProcessState)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(stopWait):
		p.kill()
		return fmt.Errorf("process %d did not end within %s of SIGTERM", p.pgid, stopWait)
	}
	if err := waitGroupEmpty(p.pgid, groupWait); err != nil {
		p.kill()
		return err
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("process %d after SIGTERM: %s", p.pgid, p.cmd.ProcessState)
	}
	return nil
}

// pause stops the leader alone (SIGSTOP), not its children: a paused node's
// replicator keeps running, as on a machine where only the server hangs.
func (p *proc) pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// resume continues a paused leader.
func (p *proc) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// logTail returns the last n bytes of the process's output.
func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}

// waitGroupEmpty polls until no live process is left in group pgid.
func waitGroupEmpty(pgid int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d: %v still alive %s after its leader ended", pgid, left, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupMembers lists the live (not zombie) processes of group pgid from
// /proc/<pid>/stat: state is field 3, pgrp field 5.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		// The command name in parentheses may hold spaces.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
