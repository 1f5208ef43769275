//go:build last

// The cold start's processes: the built munin binary run as import, reindex
// and serve, each its own process, so that its time and resident memory are
// its own and not the test's.

package lasttest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildMunin builds the binary of this module into a temp directory, or
// returns -last.munin.
func buildMunin(t testing.TB) string {
	if *lastMunin != "" {
		return *lastMunin
	}
	bin := filepath.Join(t.TempDir(), "munin")
	if out, err := exec.Command("go", "build", "-o", bin, "munin").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ranCmd is a finished command: its output, wall time and peak RSS.
type ranCmd struct {
	stdout string
	wall   time.Duration
	maxRSS uint64 // bytes
	cpu    time.Duration
}

// runMunin runs bin with args to its end and fails the test if it fails.
func runMunin(t testing.TB, bin string, args ...string) ranCmd {
	r, err := tryMunin(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryMunin runs bin with args to its end (at most 30 minutes); a failure
// is an error with the command's last output.
func tryMunin(bin string, args ...string) (ranCmd, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := ranCmd{stdout: stdout.String(), wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = uint64(ru.Maxrss) * 1024 // Linux: kilobytes
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if err != nil {
		// munin's own last words say why; a progress bar may stand before
		// them on the same line.
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "munin: "); i >= 0 {
			msg = msg[i:]
		}
		return r, fmt.Errorf("munin %s: %v: %s%s", strings.Join(args, " "), err, stdout.String(), tail(msg, 2000))
	}
	return r, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// serveProc is a running munin serve.
type serveProc struct {
	t       testing.TB
	cmd     *exec.Cmd
	url     string
	started time.Time
	up      time.Duration // from start until the port accepted
	log     string
	done    chan struct{}
}

// startServe starts munin serve on dir, 127.0.0.1 and a free port, and
// waits (at most a minute) until the port accepts. The limits per key and
// the write budget are off: one client measures the server, not its
// protection. A recall may wait for its project's index up to five minutes
// (default 10 s), so that the first recall measures the whole build instead
// of answering unavailable.
func startServe(t testing.TB, bin, dir string) *serveProc {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &serveProc{t: t, url: "http://" + addr + "/mcp", log: filepath.Join(t.TempDir(), "serve.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(bin, "serve", "--data", dir, "--addr", addr, "--budget-off",
		"--rate-per-key=-1", "--max-inflight-per-key=-1", "--recall-rate=-1", "--index-wait=5m")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("munin serve endete beim Start: %s\n%s", p.cmd.ProcessState, p.logTail())
		default:
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			p.up = time.Since(p.started)
			return p
		}
	}
	t.Fatalf("munin serve nimmt nach einer Minute keine Verbindung an\n%s", p.logTail())
	return nil
}

func (p *serveProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	return tail(string(b), 2000)
}

// stop ends the server with SIGTERM, waits for it (at most a minute) and
// returns how long it took to end.
func (p *serveProc) stop() time.Duration {
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
		if !p.cmd.ProcessState.Success() {
			p.t.Errorf("munin serve nach SIGTERM: %s\n%s", p.cmd.ProcessState, p.logTail())
		}
	case <-time.After(time.Minute):
		p.t.Fatalf("munin serve endet nicht binnen einer Minute nach SIGTERM\n%s", p.logTail())
	}
	return time.Since(start)
}

// memory reads the server's resident set now and its peak (VmRSS, VmHWM).
func (p *serveProc) memory() (rss, peak uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatalf("Speicher des Servers lesen: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if name == "VmRSS" {
			rss = kb * 1024
		} else {
			peak = kb * 1024
		}
	}
	return rss, peak
}

// cpu is the server's CPU time so far (user and system, /proc/PID/stat).
func (p *serveProc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatalf("CPU-Zeit des Servers lesen: %v", err)
	}
	// The command name in parentheses may hold spaces; the fields after it
	// start with the state (field 3); utime and stime are fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat times.
const clockTicks = 100

// diskUse is the space files under dir take on disk (allocated blocks, as
// du counts), and false if dir does not exist.
func diskUse(dir string) (uint64, bool) {
	if _, err := os.Stat(dir); err != nil {
		return 0, false
	}
	var n uint64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += uint64(st.Blocks) * 512
			}
		}
		return nil
	})
	return n, true
}
