//go:build cluster

package clustertest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shell starts sh -c script as a group leader, as a node is started.
func shell(t *testing.T, script string) *proc {
	t.Helper()
	p, err := startProc(t, filepath.Join(t.TempDir(), "sh.log"), []string{"CLUSTERTEST_X=1"}, "/bin/sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitMembers polls until group pgid has n live members (at most 5 s).
func waitMembers(t *testing.T, pgid, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := groupMembers(pgid); len(m) == n {
			return m
		}
	}
	t.Fatalf("group %d: members %v, want %d", pgid, groupMembers(pgid), n)
	return nil
}

// A kill of the group takes the leader and its children (a node and its
// litestream) down together, and waits until they are gone.
func TestKillTakesTheWholeGroup(t *testing.T) {
	p := shell(t, "sleep 300 & sleep 300 & wait")
	members := waitMembers(t, p.pgid, 3)
	if !slices.Contains(members, p.pgid) {
		t.Fatalf("leader %d not among the group's members %v", p.pgid, members)
	}
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	if !p.exited() {
		t.Fatal("leader not reaped after kill")
	}
	if m := groupMembers(p.pgid); len(m) != 0 {
		t.Fatalf("after kill -9 of the group, %v are alive", m)
	}
	// A second kill of a dead group is no error (cleanup kills again).
	if err := p.kill(); err != nil {
		t.Fatalf("second kill: %v", err)
	}
}

// A leader that ends cleanly on SIGTERM and takes its child with it stops
// without error; its environment got the extra variable.
func TestStopClean(t *testing.T) {
	p := shell(t, `test "$CLUSTERTEST_X" = 1 || exit 3; sleep 300 & child=$!; trap 'kill $child; exit 0' TERM; wait`)
	waitMembers(t, p.pgid, 2)
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.logTail(500))
	}
	if m := groupMembers(p.pgid); len(m) != 0 {
		t.Fatalf("after stop, %v are alive", m)
	}
}

// A leader that ends on SIGTERM but leaves a child behind is an error, and
// the child is killed; so is one that dies of the signal.
func TestStopUnclean(t *testing.T) {
	for name, script := range map[string]string{
		"leftover child":  `sleep 300 & trap 'exit 0' TERM; wait`,
		"killed by TERM":  `exec sleep 300`,
		"already stopped": `exit 0`,
	} {
		t.Run(name, func(t *testing.T) {
			p := shell(t, script)
			if name == "already stopped" {
				<-p.done
			} else {
				waitMembers(t, p.pgid, map[string]int{"leftover child": 2, "killed by TERM": 1}[name])
			}
			err := p.stop()
			if err == nil {
				t.Fatal("stop: no error")
			}
			if m := groupMembers(p.pgid); len(m) != 0 {
				t.Fatalf("after stop (%v), %v are alive", err, m)
			}
		})
	}
}

// pause stops the leader alone; its child keeps running; resume continues it.
func TestPauseLeaderOnly(t *testing.T) {
	p := shell(t, "sleep 300 & wait")
	members := waitMembers(t, p.pgid, 2)
	if err := p.pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.pgid, "T")
	for _, pid := range members {
		if pid != p.pgid && procState(pid) == "T" {
			t.Fatalf("child %d was stopped too", pid)
		}
	}
	if err := p.resume(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.pgid, "S")
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
}

func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if procState(pid) == want {
			return
		}
	}
	t.Fatalf("process %d in state %q, want %q", pid, procState(pid), want)
}
