package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/search"
)

func serve(args []string, stdout, stderr io.Writer) error {
	var cfg app.Config
	fs := newFlags("serve", &cfg, stderr)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address (env MUNIN_ADDR)")
	origins := fs.String("allowed-origins", "", "comma-separated extra allowed Origin values (env MUNIN_ALLOWED_ORIGINS)")
	fs.IntVar(&cfg.WriteBudget, "write-budget", memory.DefaultWriteBudget, "default writes per project per hour (env MUNIN_WRITE_BUDGET)")
	fs.IntVar(&cfg.WriteBudgetBytes, "write-budget-bytes", memory.DefaultWriteBudgetBytes, "default content bytes per project per hour (env MUNIN_WRITE_BUDGET_BYTES)")
	fs.DurationVar(&cfg.IndexWait, "index-wait", search.DefaultIndexWait, "longest a recall waits for queued index refreshes or a build before it answers unavailable (env MUNIN_INDEX_WAIT)")
	fs.BoolVar(&cfg.BudgetOff, "budget-off", false, "switch the write budget off for the whole server (env MUNIN_BUDGET_OFF)")
	fs.IntVar(&cfg.MaxContent, "max-content", memory.DefaultMaxContent, "largest entry content in bytes (env MUNIN_MAX_CONTENT)")
	fs.IntVar(&cfg.MaxInFlight, "max-inflight", 64, "requests served at once; the excess gets 429 (env MUNIN_MAX_INFLIGHT; -1: no limit)")
	fs.DurationVar(&cfg.SessionIdleTTL, "session-idle-ttl", 30*time.Minute, "end MCP sessions unused for this long (env MUNIN_SESSION_IDLE_TTL)")
	fs.BoolVar(&cfg.SearchLogOff, "search-log-off", false, "do not write the search log (env MUNIN_SEARCH_LOG_OFF)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *origins != "" {
		cfg.AllowedOrigins = strings.Split(*origins, ",")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	slog.SetDefault(cfg.Logger)
	app.TuneGC()
	cfg.Exclusive = true

	// The first signal starts a graceful shutdown; a second one ends the
	// process at once, as an operator pressing Ctrl-C twice expects.
	ctx, stop := untilSignal()
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
	token := fs.String("key", "", "the agent's key (env MUNIN_KEY)")
	if err := parseNoArgs(fs, args); err != nil {
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
