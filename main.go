// Command munin is a memory server for teams of AI agents: MCP over
// Streamable HTTP (/mcp) or stdio, a REST API and a web UI, on embedded SQLite.
//
//	munin [serve]                 serve HTTP (the default)
//	munin stdio --key KEY         serve the MCP tools over stdin/stdout
//	munin key create --workspace W --project P --agent NAME [--role read|write|admin]
//	munin key list | munin key revoke ID
//	munin project list
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
)

const usage = `usage:
  munin [serve] [flags]           serve MCP (/mcp), REST (/api/v1) and the web UI
  munin stdio --key KEY           serve the MCP tools over stdin/stdout
  munin key create --workspace W --project P --agent NAME [--role read|write|admin]
  munin key list
  munin key revoke ID
  munin project list
Every command takes --data DIR (env MUNIN_DATA, default ./data); "munin serve -h" lists the server flags.
`

func main() {
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
