// Package cli is Munin's command line: serve, stdio, key and project
// administration, backup, export, import and reindex. main.go only calls Run.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"munin/internal/app"
)

// Run runs the command line args (without the program name). Help (munin
// help, -h, --help, also after a command) goes to stdout and is no error.
func Run(args []string, stdout, stderr io.Writer) error {
	err := dispatch(args, stdout, stderr)
	if h := (*helpRequested)(nil); errors.As(err, &h) {
		h.print(stdout)
		return nil
	}
	return err
}

// dispatch runs the command args names (serve when args start with a flag).
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelpFlag(args[0]) {
		printUsage(stdout)
		return nil
	}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "stdio":
		return stdio(args, os.Stdin, stdout, stderr)
	case "key":
		return keyCmd(args, stdout, stderr)
	case "project":
		return projectCmd(args, stdout, stderr)
	case "backup", "export", "import", "reindex":
		return portableCmd(cmd, args, stdout, stderr)
	case "version":
		return versionCmd(args, stdout)
	case "help":
		if len(args) == 0 {
			printUsage(stdout)
			return nil
		}
		if args[0] == "help" || isHelpFlag(args[0]) {
			return fmt.Errorf("munin help takes a command name, got %q", args[0])
		}
		return dispatch(append(args[:1:1], "--help"), stdout, stderr)
	}
	return fmt.Errorf("unknown command %q (munin help lists the commands)", cmd)
}

// defaultDataDir is --data when neither the flag nor MUNIN_DATA is given.
const defaultDataDir = "./data"

// newFlags declares the flags every command shares and binds them to cfg.
func newFlags(name string, cfg *app.Config) *flag.FlagSet {
	fs := newFlagSet(name)
	fs.StringVar(&cfg.DataDir, "data", defaultDataDir, "data directory (env MUNIN_DATA)")
	fs.StringVar(&cfg.Synchronous, "synchronous", "FULL", "SQLite synchronous mode, NORMAL or FULL (env MUNIN_SYNCHRONOUS)")
	return fs
}

// parseNoArgs parses flags (and their environment variables) of a command
// that takes no positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseInterspersed(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("%s takes no arguments, got %q", fs.Name(), pos)
	}
	return err
}

// parseInterspersed parses flags that may follow positional arguments and
// returns the positional ones; then it applies the environment (applyEnv).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, parseError(fs, err)
		}
		if fs.NArg() == 0 {
			return pos, applyEnv(fs)
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// envOf names the environment variable of each flag that has one.
var envOf = map[string]string{
	"data": "MUNIN_DATA", "synchronous": "MUNIN_SYNCHRONOUS", "addr": "MUNIN_ADDR",
	"allowed-origins": "MUNIN_ALLOWED_ORIGINS", "write-budget": "MUNIN_WRITE_BUDGET",
	"budget-off": "MUNIN_BUDGET_OFF", "max-content": "MUNIN_MAX_CONTENT",
	"max-inflight": "MUNIN_MAX_INFLIGHT", "max-inflight-per-key": "MUNIN_MAX_INFLIGHT_PER_KEY",
	"rate-per-key":     "MUNIN_RATE_PER_KEY",
	"session-idle-ttl": "MUNIN_SESSION_IDLE_TTL",
	"search-log-off":   "MUNIN_SEARCH_LOG_OFF", "key": "MUNIN_KEY", "recall-exact": "MUNIN_RECALL_EXACT",
	"search-log-days": "MUNIN_SEARCH_LOG_DAYS", "search-log-rows": "MUNIN_SEARCH_LOG_ROWS",
	"recall-rate": "MUNIN_RECALL_RATE", "recall-burst": "MUNIN_RECALL_BURST",
	"recall-concurrency": "MUNIN_RECALL_CONCURRENCY",
	"max-sessions":       "MUNIN_MAX_SESSIONS", "max-sessions-per-key": "MUNIN_MAX_SESSIONS_PER_KEY",
	"max-streams-per-key": "MUNIN_MAX_STREAMS_PER_KEY",
	"write-budget-bytes":  "MUNIN_WRITE_BUDGET_BYTES", "index-wait": "MUNIN_INDEX_WAIT",
	"index-idle": "MUNIN_INDEX_IDLE",
	"embed-url":  "MUNIN_EMBED_URL", "embed-model": "MUNIN_EMBED_MODEL",
	"cluster": "MUNIN_CLUSTER", "etcd": "MUNIN_ETCD", "etcd-prefix": "MUNIN_ETCD_PREFIX",
	"advertise": "MUNIN_ADVERTISE", "replica": "MUNIN_REPLICA", "lease-ttl": "MUNIN_LEASE_TTL",
	"replication": "MUNIN_REPLICATION", "replica-lag-max": "MUNIN_REPLICA_LAG_MAX", "litestream": "MUNIN_LITESTREAM",
}

// applyEnv gives every flag not set on the command line the value of its
// environment variable, parsed as the flag would parse it: a value that does
// not parse is an error naming the variable, never a silent default.
func applyEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := envOf[f.Name]
		if !ok || set[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %v", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// untilSignal returns a context that ends with the first SIGINT or SIGTERM;
// after it, the signals get their default effect again, so a second one
// ends the process at once.
func untilSignal() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	return ctx, stop
}
