// Package cpuuse reads how much CPU time processes have used, from Linux's
// /proc. Benchmarks and load tests that start processes (Litestream, Munin
// nodes) report CPU per operation with it: on a shared machine that moves
// far less between runs than throughput does.
package cpuuse

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tick is one clock tick of /proc/<pid>/stat (USER_HZ, 100 on Linux).
const tick = 10 * time.Millisecond

// Proc is one process and the CPU time (user and system, all its threads)
// it has used so far.
type Proc struct {
	PID, Parent int
	Command     string // the kernel's name for it (comm), at most 15 bytes
	CPU         time.Duration
}

// ErrUnsupported is returned where there is no /proc to read.
var ErrUnsupported = errors.New("cpuuse: no /proc on this system")

// Of returns one process.
func Of(pid int) (Proc, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return Proc{}, ErrUnsupported
		}
	}
	if err != nil {
		return Proc{}, err
	}
	return parse(pid, string(raw))
}

// parse reads a stat line: "pid (comm) state ppid … utime stime …"; comm
// may hold spaces and parentheses, so the fields are counted from its last ")".
func parse(pid int, stat string) (Proc, error) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("cpuuse: /proc/%d/stat: no command", pid)
	}
	f := strings.Fields(stat[end+1:])
	if len(f) < 13 { // state is f[0], ppid f[1], utime f[11], stime f[12]
		return Proc{}, fmt.Errorf("cpuuse: /proc/%d/stat: %d fields", pid, len(f))
	}
	var n [3]int
	for i, s := range []string{f[1], f[11], f[12]} {
		v, err := strconv.Atoi(s)
		if err != nil {
			return Proc{}, fmt.Errorf("cpuuse: /proc/%d/stat: %w", pid, err)
		}
		n[i] = v
	}
	return Proc{PID: pid, Parent: n[0], Command: stat[open+1 : end], CPU: time.Duration(n[1]+n[2]) * tick}, nil
}

// Tree returns root and every process descended from it. Processes that
// end while it reads are left out.
func Tree(root int) ([]Proc, error) {
	self, err := Of(root)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]Proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		if p, err := Of(pid); err == nil {
			children[p.Parent] = append(children[p.Parent], p)
		}
	}
	out := []Proc{self}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out, nil
}
