//go:build unix

package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid no longer runs (reaped, or a zombie nobody reaped yet).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S …": the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits (bounded) until pid has ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if gone(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still runs after 10 s", pid)
}

// kill -9 of the sidecar: syncs fail with a clear error until the supervisor
// has restarted it and OnRestart has registered the file again; then syncs
// work and a restore holds every row, including those written meanwhile.
func TestSidecarKilledAndRestarted(t *testing.T) {
	bin := requireBinary(t)
	w := openWriter(t, filepath.Join(t.TempDir(), "ws.db"))
	url := EpochURL(fileURL(t), "ws", 7)
	var sc atomic.Pointer[Sidecar]
	gate := make(chan struct{})
	registered := make(chan error, 4)
	s := startSidecar(t, Options{Binary: bin, MinBackoff: 50 * time.Millisecond,
		OnRestart: func(ctx context.Context) {
			select {
			case <-gate:
			case <-ctx.Done():
				return
			}
			registered <- sc.Load().Register(ctx, w.path, url)
		}})
	sc.Store(s)
	ctx := ctxT(t)
	if err := s.Register(ctx, w.path, url); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		w.batch(t, 32, 100)
	}
	before, err := s.Sync(ctx, w.path)
	if err != nil {
		t.Fatal(err)
	}

	pid := s.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	for i := 0; i < 2; i++ {
		w.batch(t, 32, 100) // Munin keeps committing; these are not acknowledged yet
	}
	_, err = s.Sync(ctx, w.path)
	if !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("sync with the sidecar killed: %v, want ErrUnreachable or ErrNotRegistered", err)
	}
	if !strings.Contains(err.Error(), w.path) || !strings.Contains(err.Error(), s.Socket()) {
		t.Fatalf("error %q names neither the database nor the socket", err)
	}

	close(gate)
	select {
	case err := <-registered:
		if err != nil {
			t.Fatalf("re-register after restart: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the sidecar was not restarted within 30 s")
	}
	if s.PID() == pid || s.Restarts() != 1 {
		t.Fatalf("pid %d (killed %d), restarts %d", s.PID(), pid, s.Restarts())
	}
	after, err := s.Sync(ctx, w.path)
	if err != nil {
		t.Fatalf("sync after restart: %v", err)
	}
	if after <= before {
		t.Fatalf("txid after restart %d, before %d", after, before)
	}
	out := filepath.Join(t.TempDir(), "restored.db")
	if _, err := Restore(ctx, bin, url, out, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, 5*32, 100)
}

// Stop ends the process (SIGTERM) and supervision: nothing is restarted and
// the socket no longer answers.
func TestStop(t *testing.T) {
	bin := requireBinary(t)
	ctx := ctxT(t)
	s, err := Start(ctx, Options{Binary: bin, Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("process %d still runs after Stop", pid)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := s.TXID(ctx, "/x.db"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("after Stop: %v, want ErrUnreachable", err)
	}
	if s.Restarts() != 0 {
		t.Fatalf("restarts = %d", s.Restarts())
	}
}

// A directory whose socket path would be too long gets its socket elsewhere.
func TestLongDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	s := startSidecar(t, Options{Dir: dir})
	if len(s.Socket()) >= maxSocketPath {
		t.Fatalf("socket path %d bytes: %s", len(s.Socket()), s.Socket())
	}
	if _, err := os.Stat(filepath.Join(dir, "litestream.yml")); err != nil {
		t.Fatal(err)
	}
}

// A sidecar that cannot start reports why, with its own output.
func TestStartFails(t *testing.T) {
	bin := requireBinary(t)
	dir := t.TempDir()
	// The socket path is taken by a directory: litestream only warns and never listens.
	if err := os.Mkdir(filepath.Join(dir, "ls.sock"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(ctxT(t), Options{Binary: bin, Dir: dir, StartTimeout: 2 * time.Second, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("start with a blocked socket path: %v", err)
	}
}
