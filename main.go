// Command munin is a memory server for teams of AI agents: MCP over
// Streamable HTTP (/mcp) or stdio, a REST API and a web UI, on embedded SQLite.
//
//	munin [serve]                 serve HTTP (the default)
//	munin stdio --key KEY         serve the MCP tools over stdin/stdout
//	munin key create --workspace W --project P --agent NAME [--role read|write|admin]
//	munin key list | munin key revoke ID
//	munin project list
//	munin backup DEST             online backup of every file, verified
//	munin export W/P [--out FILE] all versions of a project as JSON Lines
//	munin import W/P [FILE]       read an export back, idempotently
//	munin reindex [W/P]           build and check the search indexes
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/portable"
)

const usage = `usage:
  munin [serve] [flags]           serve MCP (/mcp), REST (/api/v1) and the web UI
  munin stdio --key KEY           serve the MCP tools over stdin/stdout
  munin key create --workspace W --project P --agent NAME [--role read|write|admin]
  munin key list
  munin key revoke ID
  munin project list
  munin backup DEST               online backup of every workspace into DEST (new or empty), verified
  munin export W/P [--out FILE]   every version of a project as JSON Lines (default stdout)
  munin import W/P [FILE]         read an export (default stdin) into W/P; idempotent; stop the server first
  munin reindex [W/P]             build the search index of one or all projects and check it
Every command takes --data DIR (env MUNIN_DATA, default ./data); "munin serve -h" lists the server flags.
`

func main() {
	app.PrivateFiles()
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "munin:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "stdio":
		return stdio(args, stderr)
	case "key":
		return keyCmd(args, stdout, stderr)
	case "project":
		return projectCmd(args, stdout, stderr)
	case "backup", "export", "import", "reindex":
		return portableCmd(cmd, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// newFlags declares the flags every command shares and binds them to cfg.
func newFlags(name string, cfg *app.Config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DataDir, "data", env("MUNIN_DATA", "./data"), "data directory (env MUNIN_DATA)")
	fs.StringVar(&cfg.Synchronous, "synchronous", env("MUNIN_SYNCHRONOUS", "FULL"), "SQLite synchronous mode, NORMAL or FULL (env MUNIN_SYNCHRONOUS)")
	return fs
}

func serve(args []string, stdout, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlags("serve", &cfg, stderr)
	fs.StringVar(&cfg.Addr, "addr", env("MUNIN_ADDR", "127.0.0.1:8080"), "listen address (env MUNIN_ADDR)")
	origins := fs.String("allowed-origins", env("MUNIN_ALLOWED_ORIGINS", ""), "comma-separated extra allowed Origin values (env MUNIN_ALLOWED_ORIGINS)")
	fs.IntVar(&cfg.WriteBudget, "write-budget", envInt("MUNIN_WRITE_BUDGET", 1000), "default writes per project per hour (env MUNIN_WRITE_BUDGET)")
	fs.BoolVar(&cfg.BudgetOff, "budget-off", envBool("MUNIN_BUDGET_OFF"), "switch the write budget off for the whole server (env MUNIN_BUDGET_OFF)")
	fs.IntVar(&cfg.MaxContent, "max-content", envInt("MUNIN_MAX_CONTENT", memory.DefaultMaxContent), "largest entry content in bytes (env MUNIN_MAX_CONTENT)")
	fs.IntVar(&cfg.MaxInFlight, "max-inflight", envInt("MUNIN_MAX_INFLIGHT", 64), "requests served at once; the excess gets 429 (env MUNIN_MAX_INFLIGHT; -1: no limit)")
	fs.DurationVar(&cfg.SessionIdleTTL, "session-idle-ttl", envDuration("MUNIN_SESSION_IDLE_TTL", 30*time.Minute), "end MCP sessions unused for this long (env MUNIN_SESSION_IDLE_TTL)")
	fs.BoolVar(&cfg.SearchLogOff, "search-log-off", envBool("MUNIN_SEARCH_LOG_OFF"), "do not write the search log (env MUNIN_SEARCH_LOG_OFF)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *origins != "" {
		cfg.AllowedOrigins = strings.Split(*origins, ",")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	slog.SetDefault(cfg.Logger)
	app.TuneGC()
	cfg.Exclusive = true

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			cfg.Logger.Error("close", "err", err)
		}
	}()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	token, err := a.Svc.Bootstrap(ctx)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	if token != "" {
		app.PrintClientConfig(stdout, url, token)
	}
	cfg.Logger.Info("munin serving", "mcp", url, "api", "http://"+ln.Addr().String()+"/api/v1", "data", cfg.DataDir)
	err = a.Serve(ctx, ln)
	cfg.Logger.Info("munin stopped")
	return err
}

func stdio(args []string, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlags("stdio", &cfg, stderr)
	token := fs.String("key", env("MUNIN_KEY", ""), "the agent's key (env MUNIN_KEY)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// stdout belongs to the protocol: logs go to stderr only.
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	cfg.Exclusive = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	key, err := a.KeyFor(ctx, *token)
	if err != nil {
		return err
	}
	return a.MCP.ServeStdio(ctx, key, os.Stdin, os.Stdout)
}

func keyCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("key needs a subcommand: create, list or revoke")
	}
	var cfg app.Config
	fs := newFlags("key "+args[0], &cfg, stderr)
	var ref memory.ProjectRef
	fs.StringVar(&ref.Workspace, "workspace", "default", "workspace of the key")
	fs.StringVar(&ref.Project, "project", "default", "project of the key")
	agent := fs.String("agent", "", "the agent's name (create)")
	role := fs.String("role", "write", "read, write or admin (create)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return withApp(cfg, func(ctx context.Context, a *app.App) error {
		switch args[0] {
		case "create":
			r, err := memory.ParseRole(*role)
			if err != nil {
				return err
			}
			token, key, err := a.Svc.CreateKey(ctx, ref, *agent, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "key %d for %s in %s (%s) — shown only once:\n%s\n", key.ID, key.Agent, ref, key.Role, token)
			return nil
		case "list":
			keys, err := a.Svc.ListKeys(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPROJECT\tAGENT\tROLE\tCREATED\tLAST USED\tSTATUS")
			for _, k := range keys {
				last, status := "never", "active"
				if k.LastUsedAt != nil {
					last = k.LastUsedAt.Format("2006-01-02 15:04")
				}
				if k.Revoked {
					status = "revoked"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Project, k.Agent, k.Role, k.CreatedAt.Format("2006-01-02 15:04"), last, status)
			}
			return tw.Flush()
		case "revoke":
			id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
			if err != nil {
				return fmt.Errorf("key revoke needs a key id, got %q", fs.Arg(0))
			}
			if err := a.Svc.RevokeKey(ctx, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "key %d revoked\n", id)
			return nil
		}
		return fmt.Errorf("unknown key subcommand %q", args[0])
	})
}

func projectCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		return errors.New("project needs a subcommand: list")
	}
	var cfg app.Config
	fs := newFlags("project list", &cfg, stderr)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return withApp(cfg, func(ctx context.Context, a *app.App) error {
		projects, err := a.Svc.ListProjects(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKSPACE\tPROJECT\tWRITE BUDGET\tCREATED")
		for _, p := range projects {
			budget := "default"
			if p.WriteBudget > 0 {
				budget = strconv.Itoa(p.WriteBudget)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Ref.Workspace, p.Ref.Project, budget, p.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	})
}

// portableCmd runs backup, export, import and reindex (internal/portable).
// Flags may come before or after the positional arguments.
func portableCmd(cmd string, args []string, stdout, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlags(cmd, &cfg, stderr)
	out := fs.String("out", "", "export: write to FILE instead of stdout")
	fs.IntVar(&cfg.MaxContent, "max-content", envInt("MUNIN_MAX_CONTENT", memory.DefaultMaxContent), "import: largest entry content in bytes (env MUNIN_MAX_CONTENT)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if cmd == "backup" {
		if len(pos) != 1 {
			return errors.New("backup needs exactly one destination directory: munin backup [--data DIR] DEST")
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		_, err := portable.Backup(ctx, cfg.DataDir, pos[0], stdout)
		return err
	}
	var refs []memory.ProjectRef
	for _, p := range pos[:min(len(pos), 1)] {
		ref, err := portable.ParseRef(p)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	if cmd != "reindex" && len(refs) == 0 {
		return fmt.Errorf("%s needs a project: munin %s [--data DIR] WORKSPACE/PROJECT", cmd, cmd)
	}
	// Import writes workspace files: a running server's index would not see it.
	cfg.Exclusive = cmd == "import"
	return withApp(cfg, func(ctx context.Context, a *app.App) error {
		switch cmd {
		case "export":
			w, closeOut, err := createOut(*out, stdout)
			if err != nil {
				return err
			}
			n, err := portable.Export(ctx, a.Store, refs[0], w)
			if err = errors.Join(err, closeOut()); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "exported %d versions of %s\n", n, refs[0])
			return nil
		case "import":
			r := io.Reader(os.Stdin)
			if len(pos) > 1 {
				f, err := os.Open(pos[1])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			res, err := portable.Import(ctx, a.Store, refs[0], r, portable.ImportOptions{MaxContent: cfg.MaxContent})
			fmt.Fprintf(stdout, "%s: %d versions read, %d imported, %d already present\n", refs[0], res.Lines, res.Imported, res.Skipped)
			return err
		}
		results, err := portable.Reindex(ctx, a.Store, refs, stderr)
		for _, r := range results {
			fmt.Fprintf(stdout, "%s: %d live entries, %d documents, built in %v; search for %q: %d hits\n",
				r.Ref, r.Scanned, r.Docs, r.Duration.Round(time.Millisecond), r.Probe, r.Hits)
		}
		return err
	})
}

// parseInterspersed parses flags that may follow positional arguments and
// returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// createOut opens the export destination: stdout for "" or "-".
func createOut(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// withApp opens the data directory for a one-shot command and closes it after.
func withApp(cfg app.Config, fn func(context.Context, *app.App) error) error {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(cfg)
	if err != nil {
		return err
	}
	return errors.Join(fn(context.Background(), a), a.Close())
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}
