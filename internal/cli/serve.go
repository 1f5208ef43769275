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
	"time"

	"munin/internal/app"
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/service"
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
	fs := newFlags("serve", &cfg)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address (env MUNIN_ADDR)")
	origins := fs.String("allowed-origins", "", "comma-separated extra allowed Origin values (env MUNIN_ALLOWED_ORIGINS)")
	fs.IntVar(&cfg.WriteBudget, "write-budget", memory.DefaultWriteBudget, "default writes per project per hour (env MUNIN_WRITE_BUDGET)")
	fs.IntVar(&cfg.WriteBudgetBytes, "write-budget-bytes", memory.DefaultWriteBudgetBytes, "default content bytes per project per hour (env MUNIN_WRITE_BUDGET_BYTES)")
	fs.DurationVar(&cfg.IndexWait, "index-wait", search.DefaultIndexWait, "longest a recall waits for queued index refreshes or a build before it answers unavailable (env MUNIN_INDEX_WAIT)")
	fs.DurationVar(&cfg.IndexIdle, "index-idle", search.DefaultIdleClose, "a project's search index unused this long is closed, and opened again on its next recall (env MUNIN_INDEX_IDLE)")
	fs.BoolVar(&cfg.BudgetOff, "budget-off", false, "switch the write budget off for the whole server (env MUNIN_BUDGET_OFF)")
	fs.IntVar(&cfg.MaxContent, "max-content", memory.DefaultMaxContent, "largest entry content in bytes (env MUNIN_MAX_CONTENT)")
	fs.IntVar(&cfg.MaxInFlight, "max-inflight", 64, "keyed requests served at once, at most half of them one project's; the excess gets 429 (env MUNIN_MAX_INFLIGHT; -1: no limit)")
	fs.Float64Var(&cfg.RatePerKey, "rate-per-key", httpserver.DefaultRatePerKey, "requests per second of one key, bursts of twice that; the excess gets 429 (env MUNIN_RATE_PER_KEY; -1: no limit)")
	fs.IntVar(&cfg.MaxInFlightPerKey, "max-inflight-per-key", httpserver.DefaultMaxInFlightPerKey, "requests of one key served at once; the excess gets 429 (env MUNIN_MAX_INFLIGHT_PER_KEY; -1: no limit)")
	fs.DurationVar(&cfg.SessionIdleTTL, "session-idle-ttl", 30*time.Minute, "end MCP sessions unused for this long (env MUNIN_SESSION_IDLE_TTL)")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "live MCP sessions in total, at most 1/8 of them one project's; past it initialize gets 429 (env MUNIN_MAX_SESSIONS)")
	fs.IntVar(&cfg.MaxSessionsPerKey, "max-sessions-per-key", mcpserver.DefaultMaxSessionsPerKey, "live MCP sessions per key; one more ends the key's least recently used (env MUNIN_MAX_SESSIONS_PER_KEY)")
	fs.IntVar(&cfg.MaxStreamsPerKey, "max-streams-per-key", mcpserver.DefaultMaxStreamsPerKey, "open GET /mcp streams per key, 4× this per project; the excess gets 429 (env MUNIN_MAX_STREAMS_PER_KEY)")
	fs.BoolVar(&cfg.SearchLogOff, "search-log-off", false, "do not write the search log (env MUNIN_SEARCH_LOG_OFF)")
	fs.BoolVar(&cfg.RecallExact, "recall-exact", false, "recall searches the words as written only: no compound or typo tiers (env MUNIN_RECALL_EXACT)")
	fs.IntVar(&cfg.SearchLogDays, "search-log-days", service.DefaultSearchLogDays, "keep search-log rows this many days (env MUNIN_SEARCH_LOG_DAYS; -1: forever)")
	fs.IntVar(&cfg.SearchLogRows, "search-log-rows", service.DefaultSearchLogRows, "keep this many newest search-log rows per project (env MUNIN_SEARCH_LOG_ROWS; -1: no limit)")
	fs.Float64Var(&cfg.RecallRate, "recall-rate", service.DefaultRecallRate, "recalls per second one key may make, 5× this one project (env MUNIN_RECALL_RATE; -1: no limit)")
	fs.IntVar(&cfg.RecallBurst, "recall-burst", service.DefaultRecallBurst, "recalls one key may make at once above its rate (env MUNIN_RECALL_BURST)")
	embedFlags(fs, &cfg)
	fs.IntVar(&cfg.RecallConcurrency, "recall-concurrency", service.DefaultRecallConcurrency, "recalls of one key running at once, more are refused; a project runs half the cores' worth (env MUNIN_RECALL_CONCURRENCY; -1: no limit)")
	finishCluster := clusterFlags(fs, &cfg)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := finishCluster(); err != nil {
		return err
	}
	if *origins != "" {
		cfg.AllowedOrigins = strings.Split(*origins, ",")
	}
	cfg.Logger = newLogger(stderr)
	slog.SetDefault(cfg.Logger)
	app.TuneGC()
	cfg.Exclusive = true
	if err := privateDataDir(cfg.DataDir, cfg.Logger); err != nil {
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
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	if err := welcome(ctx, a, cfg, stdout, base); err != nil {
		return err
	}
	cfg.Logger.Info("munin serving", "mcp", base+"/mcp", "api", base+"/api/v1", "data", cfg.DataDir)
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
	fs := newFlags("stdio", &cfg)
	var keys keyList
	embedFlags(fs, &cfg)
	fs.Var(&keys, "key", "the agent's `KEY`; repeat --key, or separate keys with commas, for one key per project; the first is the default (env MUNIN_KEY)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	token := keys.String()
	if token == "" {
		// AuthenticateMemory would answer with the HTTP header a web client
		// sends; a stdio user gives the key in the environment or a flag.
		return errors.New("stdio needs a key: set MUNIN_KEY=munin_… in the MCP client's environment for this server (or pass --key, which every user of the machine sees in ps)")
	}
	if v, ok := os.LookupEnv("MUNIN_KEY"); token != "" && (!ok || v != token) {
		fmt.Fprintln(stderr, "warning: --key is visible to every user of this machine (ps, /proc/*/cmdline); pass the key in MUNIN_KEY instead")
	}
	// stdio is started by an MCP client, often from another working
	// directory: a relative --data that holds no Munin data is a mistake,
	// not a new data directory to create.
	if err := store.CheckDataDir(cfg.DataDir); err != nil {
		where := cfg.DataDir
		if abs, aerr := filepath.Abs(cfg.DataDir); aerr == nil && abs != filepath.Clean(cfg.DataDir) {
			where += " (that is " + abs + ")"
		}
		return fmt.Errorf("stdio: %s holds no Munin data; start stdio with --data set to the absolute path of the server's data directory", where)
	}
	// stdout belongs to the protocol: logs go to stderr only.
	cfg.Logger = newLogger(stderr)
	cfg.Exclusive = true
	if err := privateDataDir(cfg.DataDir, cfg.Logger); err != nil {
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
		return fmt.Errorf("stdio refuses a server-admin key: it administers the server and reads no memory, and stdio serves memory tools only; pass a project key (read, write or admin) in MUNIN_KEY")
	} else if err != nil {
		return err
	}
	return a.MCP.ServeStdio(ctx, token, stdin, stdout)
}
