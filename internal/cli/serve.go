package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/store"
)

// serve is munin serve: it runs until the first SIGINT or SIGTERM, which
// starts a graceful shutdown; a second one ends the process at once, as an
// operator pressing Ctrl-C twice expects.
func serve(args []string, stdout, stderr io.Writer) error {
	ctx, stop := untilSignal()
	defer stop()
	return serveUntil(ctx, args, stdout, stderr)
}

// serveUntil is munin serve until ctx ends.
func serveUntil(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlagSet("serve")
	bindSettings(fs, &cfg, everySetting()...) // serve takes them all
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg.Logger = newLogger(stderr)
	slog.SetDefault(cfg.Logger)
	app.TuneGC()
	cfg.Exclusive = true
	if err := privateDataDir(cfg.Storage.DataDir, cfg.Logger); err != nil {
		return err
	}
	a, err := app.Open(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			cfg.Logger.Error("close", "err", err)
		}
	}()
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	if err := welcome(ctx, a, cfg, stdout, base); err != nil {
		return err
	}
	cfg.Logger.Info("munin serving", "mcp", base+"/mcp", "api", base+"/api/v1", "data", cfg.Storage.DataDir)
	err = a.Serve(ctx, ln)
	cfg.Logger.Info("munin stopped")
	return err
}

// keyList is a repeatable --key: each value is one key or a comma-separated
// list, and the keys are passed on as one comma-separated list, as an
// Authorization header carries them.
type keyList []string

func (k *keyList) String() string { return strings.Join(*k, ",") }

// Set adds a key (or a comma-separated list) after those already given.
func (k *keyList) Set(v string) error {
	*k = append(*k, v)
	return nil
}

func stdio(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlags("stdio", &cfg, embedSettings...)
	var keys keyList
	fs.Var(&keys, "key", "the agent's `KEY`; repeat --key, or separate keys with commas, for one key per project; the first is the default (env "+stdioKeyEnv+")")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	token := keys.String()
	if token == "" {
		// AuthenticateMemory would answer with the HTTP header a web client
		// sends; a stdio user gives the key in the environment or a flag.
		return errors.New("stdio needs a key: set MUNIN_KEY=munin_… in the MCP client's environment for this server (or pass --key, which every user of the machine sees in ps)")
	}
	if v, ok := os.LookupEnv(stdioKeyEnv); token != "" && (!ok || v != token) {
		fmt.Fprintln(stderr, "warning: --key is visible to every user of this machine (ps, /proc/*/cmdline); pass the key in MUNIN_KEY instead")
	}
	// stdio is started by an MCP client, often from another working
	// directory: a relative --data that holds no Munin data is a mistake,
	// not a new data directory to create.
	if err := store.CheckDataDir(cfg.Storage.DataDir); err != nil {
		where := cfg.Storage.DataDir
		if abs, aerr := filepath.Abs(where); aerr == nil && abs != filepath.Clean(where) {
			where += " (that is " + abs + ")"
		}
		return fmt.Errorf("stdio: %s holds no Munin data; start stdio with --data set to the absolute path of the server's data directory", where)
	}
	// stdout belongs to the protocol: logs go to stderr only.
	cfg.Logger = newLogger(stderr)
	cfg.Exclusive = true
	if err := privateDataDir(cfg.Storage.DataDir, cfg.Logger); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(cfg)
	if memory.ErrorCode(err) == memory.CodeConflict {
		return fmt.Errorf("%w; munin stdio cannot share a data directory with a running server: connect the MCP client to the server's /mcp URL instead, or stop the server", err)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	// Checked here, not on the first call: the client's user sees the
	// reason in its log at once.
	if _, err := a.Svc.AuthenticateMemory(ctx, token); memory.ErrorCode(err) == memory.CodeForbidden {
		return fmt.Errorf("stdio refuses a server-admin key: it administers the server and reads no memory, and stdio serves memory tools only; pass a project key (read, propose, write or admin) in MUNIN_KEY")
	} else if err != nil {
		return err
	}
	return a.MCP.ServeStdio(ctx, token, stdin, stdout)
}
