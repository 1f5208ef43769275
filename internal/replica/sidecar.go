// Package replica runs Litestream beside Munin: one `litestream replicate`
// process per node (the sidecar), driven over its control socket, and
// `litestream restore` for takeovers.
//
// Litestream runs as a separate process, not as a library: its library opens
// databases with the modernc SQLite driver, and two SQLite copies in one
// process do not see each other's POSIX locks (SQLite's documented corruption
// case). A separate process reading the WAL Munin writes is Litestream's
// normal mode. Munin's writer runs with wal_autocheckpoint=0 and leaves
// checkpoints to Litestream.
//
// The sidecar is started with no databases; Munin registers each workspace
// file it owns at a replica URL per epoch (EpochURL), calls Sync after each
// group commit before acknowledging it (sync mode) or watches Lag (async
// mode), and unregisters the file when it gives the workspace up.
package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultStopTimeout  = 10 * time.Second
	DefaultMinBackoff   = 250 * time.Millisecond
	DefaultMaxBackoff   = 5 * time.Second
)

// maxSocketPath keeps the socket path below the kernel's sun_path limit
// (108 bytes on Linux, 104 on macOS).
const maxSocketPath = 100

// stableRun is how long a sidecar must have run before a crash restarts it
// without the accumulated backoff.
const stableRun = time.Minute

// Options configure a Sidecar.
type Options struct {
	// Binary is the litestream executable; empty means Binary().
	Binary string
	// Dir holds the generated config and, if its path is short enough, the
	// control socket (otherwise the socket goes to a fresh temporary directory).
	Dir string
	// Logger receives the sidecar's output (warnings as warnings, the rest at
	// debug level) and restart notices; nil means slog.Default().
	Logger *slog.Logger
	// OnRestart is called after the sidecar exited unexpectedly and a new one
	// answers on the socket. The new one knows no databases: OnRestart must
	// register again every file that should be replicated. Its context ends
	// when Stop is called. Syncs fail (ErrUnreachable, ErrNotRegistered) until then.
	OnRestart func(ctx context.Context)
	// StartTimeout bounds the wait for the socket to answer (DefaultStartTimeout).
	StartTimeout time.Duration
	// StopTimeout bounds the wait after SIGTERM before SIGKILL (DefaultStopTimeout).
	StopTimeout time.Duration
	// MinBackoff and MaxBackoff bound the pause before a restart.
	MinBackoff, MaxBackoff time.Duration
}

// Sidecar is a supervised `litestream replicate` process with a Client on
// its control socket. Methods of the embedded Client are safe for concurrent use.
type Sidecar struct {
	*Client
	opts    Options
	out     *output
	tmpDir  string // socket directory to remove on Stop, if one was made
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	stopErr error // set by the supervisor before done is closed

	mu     sync.Mutex
	pid    int
	spawns int // processes started, the first one included
}

// proc is one running child; done is closed once it was reaped.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start writes the config, spawns `litestream replicate` and returns once its
// control socket answers. The process is supervised until Stop.
func Start(ctx context.Context, opts Options) (*Sidecar, error) {
	if opts.Dir == "" {
		return nil, errors.New("replica sidecar: Options.Dir is empty")
	}
	if opts.Binary == "" {
		b, err := Binary()
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	setDefaults(&opts)
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("replica sidecar dir %s: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("replica sidecar dir: %w", err)
	}
	s := &Sidecar{opts: opts, out: &output{logger: opts.Logger}, done: make(chan struct{})}
	sock := filepath.Join(dir, "ls.sock")
	if len(sock) >= maxSocketPath {
		if s.tmpDir, err = os.MkdirTemp("", "munin-ls-"); err != nil {
			return nil, fmt.Errorf("replica sidecar socket dir: %w", err)
		}
		sock = filepath.Join(s.tmpDir, "ls.sock")
	}
	cfg := filepath.Join(dir, "litestream.yml")
	if err := writeConfig(cfg, sock); err != nil {
		s.cleanup()
		return nil, err
	}
	if err := CheckVersion(ctx, opts.Binary); err != nil {
		opts.Logger.Warn("litestream version differs from the tested one", "err", err)
	}
	s.Client = NewClient(sock)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	first := make(chan error, 1)
	go s.supervise(ctx, cfg, first)
	if err := <-first; err != nil {
		s.cancel()
		<-s.done
		s.cleanup()
		return nil, err
	}
	return s, nil
}

func setDefaults(o *Options) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
}

// writeConfig writes a config with the control socket on and no databases
// (Munin registers them). shutdown-sync-timeout bounds the final upload on
// SIGTERM below Munin's StopTimeout. JSON strings are valid YAML scalars.
func writeConfig(path, sock string) error {
	q, err := json.Marshal(sock)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf("# written by munin; regenerated at every start\n"+
		"socket:\n  enabled: true\n  path: %s\n  permissions: 384 # 0600\n"+
		"logging:\n  level: info\n  type: text\n"+
		"shutdown-sync-timeout: 5s\n"+
		"dbs: []\n", q)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write litestream config: %w", err)
	}
	return nil
}

// supervise runs on one locked OS thread (Pdeathsig fires when the thread
// that forked the child exits) and restarts the child until Stop.
func (s *Sidecar) supervise(startCtx context.Context, cfg string, first chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(s.done)
	backoff := s.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		readyCtx := s.ctx
		if attempt == 0 {
			readyCtx = startCtx
		}
		p, err := s.spawn(cfg)
		if err == nil {
			if err = s.waitReady(readyCtx, p); err != nil {
				s.terminate(p)
			}
		}
		if attempt == 0 {
			first <- err
			if err != nil {
				return
			}
		} else if err != nil {
			s.opts.Logger.Warn("litestream sidecar restart failed", "err", err)
		} else {
			s.opts.Logger.Warn("litestream sidecar restarted", "pid", p.cmd.Process.Pid)
			if s.opts.OnRestart != nil {
				s.opts.OnRestart(s.ctx)
			}
		}
		if err == nil {
			began := time.Now()
			select {
			case <-p.done:
				s.opts.Logger.Warn("litestream sidecar exited unexpectedly", "err", p.err, "output", s.out.last())
				s.Client.forget()
				if time.Since(began) > stableRun {
					backoff = s.opts.MinBackoff
				}
			case <-s.ctx.Done():
				s.stopErr = s.terminate(p)
				return
			}
		}
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
			return
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)
	}
}

// spawn starts one child and a goroutine that reaps it.
func (s *Sidecar) spawn(cfg string) (*proc, error) {
	cmd := exec.Command(s.opts.Binary, "replicate", "-config", cfg, "-no-expand-env")
	cmd.SysProcAttr = sysProcAttr()
	cmd.Env = childEnv()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	go s.out.forward(outR, "stdout")
	go s.out.forward(errR, "stderr")
	if err := cmd.Start(); err != nil {
		outW.Close()
		errW.Close()
		return nil, fmt.Errorf("start %s replicate: %w", s.opts.Binary, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	s.mu.Lock()
	s.pid = cmd.Process.Pid
	s.spawns++
	s.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		outW.Close()
		errW.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls the socket until it answers, the child exits or the bound passes.
func (s *Sidecar) waitReady(ctx context.Context, p *proc) error {
	deadline := time.NewTimer(s.opts.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.Client.ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("litestream replicate exited before its socket %s answered: %v; output: %s",
				s.Client.Socket(), p.err, s.out.last())
		case <-deadline.C:
			return fmt.Errorf("litestream socket %s did not answer within %s: %v; output: %s",
				s.Client.Socket(), s.opts.StartTimeout, err, s.out.last())
		case <-ctx.Done():
			return fmt.Errorf("waiting for litestream socket %s: %w", s.Client.Socket(), ctx.Err())
		case <-tick.C:
		}
	}
}

// terminate sends SIGTERM (Litestream then uploads what it has and closes
// its databases), SIGKILL after StopTimeout, and waits until the child is reaped.
func (s *Sidecar) terminate(p *proc) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("litestream sidecar did not stop within %s after SIGTERM; killed", s.opts.StopTimeout)
	}
}

// childEnv is Munin's environment without its own MUNIN_* settings (the
// cluster secret among them): Litestream needs only its replica credentials
// (AWS_* for S3) and the usual HOME, PATH, TMPDIR.
func childEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MUNIN_") {
			out = append(out, kv)
		}
	}
	return out
}

// PID returns the process id of the current (or last) sidecar process.
func (s *Sidecar) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Restarts returns how many processes were started after the first one.
func (s *Sidecar) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.spawns-1, 0)
}

// Stop terminates the sidecar (SIGTERM, SIGKILL after StopTimeout), waits
// for it and ends supervision. Unregister databases first so Litestream's
// final uploads happen while Munin still waits for them. Stop is idempotent.
func (s *Sidecar) Stop() error {
	s.cancel()
	<-s.done
	s.cleanup()
	return s.stopErr
}

func (s *Sidecar) cleanup() {
	if s.tmpDir != "" {
		_ = os.RemoveAll(s.tmpDir)
	}
}
