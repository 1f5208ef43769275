package cpuuse

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// A command with a space and a ")" in it, as the kernel writes it.
	p, err := parse(42, "42 (a b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 1 0 5 1000 200")
	if err != nil {
		t.Fatal(err)
	}
	want := Proc{PID: 42, Parent: 7, Command: "a b) c", CPU: 281 * tick}
	if p != want {
		t.Fatalf("parse = %+v, want %+v", p, want)
	}
	for _, bad := range []string{"", "42 no command", "42 (x) S 7 1 2", "42 (x) S 7 42 42 0 -1 4194560 100 0 0 0 u 31"} {
		if _, err := parse(42, bad); err == nil {
			t.Errorf("parse(%q) = nil error", bad)
		}
	}
}

// TestTreeSeesBusyChild starts a child that burns CPU and finds it, and its
// CPU time, under this process.
func TestTreeSeesBusyChild(t *testing.T) {
	if _, err := Of(os.Getpid()); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done; sleep 30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		procs, err := Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if procs[0].PID != os.Getpid() {
			t.Fatalf("first process is %d, want this one", procs[0].PID)
		}
		for _, p := range procs[1:] {
			if p.PID == cmd.Process.Pid && p.CPU >= 100*time.Millisecond {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d with ≥ 100 ms CPU not in %+v", cmd.Process.Pid, procs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
