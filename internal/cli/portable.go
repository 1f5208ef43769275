package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"munin/internal/app"
	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/portable"
	"munin/internal/search/index"
	"munin/internal/service"
	"munin/internal/store"
)

// portableCmd runs backup, export, import and reindex (internal/portable).
// Flags may come before or after the positional arguments.
func portableCmd(cmd string, args []string, stdout, stderr io.Writer) error {
	var cfg app.Config
	settings := []string{"max-content"}
	if cmd == "reindex" {
		settings = append(settings, embedSettings...)
	}
	fs := newFlags(cmd, &cfg, settings...)
	fs.Lookup("max-content").Usage = "import: " + fs.Lookup("max-content").Usage
	out := fs.String("out", "", "export: write to FILE instead of stdout")
	var embeddings *bool
	if cmd == "reindex" {
		embeddings = fs.Bool("embeddings", false, "fill the missing vectors of meaning search instead (needs --embed-url and --embed-model; stop the server first)")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if most := map[string]int{"backup": 1, "export": 1, "import": 2, "reindex": 1}[cmd]; len(pos) > most {
		return fmt.Errorf("%s takes at most %d arguments, got %q", cmd, most, pos)
	}
	if embeddings != nil && *embeddings {
		return reindexEmbeddings(cfg, pos, stdout, stderr)
	}
	// Only reindex --embeddings calls the endpoint; a plain reindex ignores it.
	cfg.Embeddings.URL, cfg.Embeddings.Model = "", ""
	if cmd == "backup" {
		if len(pos) != 1 {
			return errors.New("backup needs exactly one destination directory: munin backup [--data DIR] DEST")
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		_, err := portable.Backup(ctx, cfg.Storage.DataDir, pos[0], stdout)
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
	// Import writes workspace files, reindex the indexes a running server
	// keeps open: both need the data directory to themselves.
	cfg.Exclusive = cmd == "import" || cmd == "reindex"
	return withApp(cfg, cmd != "import", func(ctx context.Context, a *app.App) error {
		switch cmd {
		case "export":
			w, finish, err := createOut(*out, stdout)
			if err != nil {
				return err
			}
			n, err := portable.Export(ctx, a.Store, refs[0], w)
			if err = finish(err); err != nil {
				return err
			}
			proposals := ""
			if n.Proposals > 0 {
				proposals = fmt.Sprintf(" and %d proposals", n.Proposals)
			}
			fmt.Fprintf(stderr, "exported %d versions%s of %s\n", n.Versions, proposals, refs[0])
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
			res, err := portable.Import(ctx, a.Store, refs[0], r, portable.ImportOptions{MaxContent: cfg.Limits.MaxContent})
			fmt.Fprintf(stdout, "%s: %d versions read, %d imported, %d already present\n", refs[0], res.Lines, res.Imported, res.Skipped)
			if res.Proposals > 0 {
				fmt.Fprintf(stdout, "%s: %d proposals read, %d imported, %d already present\n", refs[0], res.Proposals, res.ProposalsImported, res.ProposalsSkipped)
			}
			if err != nil {
				return err
			}
			return hintKey(ctx, a, refs[0], cfg.Storage.DataDir, stderr)
		}
		tuneForReindex()
		results, err := portable.Reindex(ctx, a.Store, cfg.Storage.DataDir, refs, stderr)
		for _, r := range results {
			fmt.Fprintf(stdout, "%s: %d live entries, %d documents, built in %v; search for %q: %d hits\n",
				r.Ref, r.Scanned, r.Docs, r.Duration.Round(time.Millisecond), r.Probe, r.Hits)
		}
		return err
	})
}

// reindexMemoryLimit is the Go heap's soft limit in munin reindex: without
// it the collector let the heap grow to twice the live data (then with the
// build's map of every slug's version). At 1,000,000 entries it cut the
// anonymous memory at the peak from 327 to 252 MiB at the same CPU time
// (2026-12-04). Since an offline build keeps no such map and merges in
// steps (index.BuildOffline), the heap stays below it. GOMEMLIMIT
// overrides it.
const reindexMemoryLimit = 256 << 20

// tuneForReindex sets the process for an offline build (the command holds
// the data directory's lock, no server shares the process): builds on
// every core with bounded memory (index.BuildOffline), and
// reindexMemoryLimit unless GOMEMLIMIT chose one.
func tuneForReindex() {
	index.BuildOffline()
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(reindexMemoryLimit)
	}
}

// createOut opens the export destination: stdout for "" or "-". A regular
// file (or a new one) is written beside its final name and renamed onto it
// by finish(nil), so a failed export never truncates what was there;
// finish(err) removes the partial file. Anything else — a FIFO, /dev/stdout,
// a shell's >(…) — is written directly, as it cannot be replaced.
func createOut(path string, stdout io.Writer) (io.Writer, func(error) error, error) {
	if path == "" || path == "-" {
		return stdout, func(err error) error { return err }, nil
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved // replace the file a link points to, not the link
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func(err error) error { return errors.Join(err, f.Close()) }, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, nil, err
	}
	finish := func(err error) error {
		if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			return errors.Join(err, os.Remove(f.Name()))
		}
		return nil
	}
	return f, finish, nil
}

// withApp opens the data directory for a one-shot command and closes it
// after. A command that only reads (mustExist) refuses a directory without
// Munin data rather than creating one.
func withApp(cfg app.Config, mustExist bool, fn func(context.Context, *app.App) error) error {
	if mustExist {
		if err := store.CheckDataDir(cfg.Storage.DataDir); err != nil {
			return err
		}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(cfg)
	if err != nil {
		return err
	}
	// SIGINT/SIGTERM cancel the command, so it ends through its own cleanup
	// (an export removes its partial file); a second signal ends the process.
	ctx, stop := untilSignal()
	defer stop()
	return errors.Join(fn(ctx, a), a.Close())
}

// withService runs an admin command (key, project) on the service: with
// --etcd, that of a cluster's control data (no data directory is opened),
// else that of the data directory (see withApp).
func withService(cfg app.Config, mustExist bool, fn func(context.Context, *service.Service) error) error {
	if len(cfg.Cluster.Etcd) == 0 {
		return withApp(cfg, mustExist, func(ctx context.Context, a *app.App) error { return fn(ctx, a.Svc) })
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.OpenClusterAdmin(cfg)
	if err != nil {
		return err
	}
	ctx, stop := untilSignal()
	defer stop()
	return errors.Join(fn(ctx, a.Svc), a.Close())
}

// hintKey tells, after an import, how to reach a project that no live key
// opens (a new one, typically): without a key its data cannot be read. It
// prints the command rather than creating a secret nobody asked for.
func hintKey(ctx context.Context, a *app.App, ref memory.ProjectRef, dataDir string, stderr io.Writer) error {
	keys, err := a.Svc.ListKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Project == ref && !k.Revoked {
			return nil
		}
	}
	data := ""
	if dataDir != config.DefaultDataDir {
		data = " --data " + shellQuote(dataDir)
	}
	fmt.Fprintf(stderr, "%s has no key yet, so nothing can read it; create one with:\n  munin key create%s --workspace %s --project %s --agent NAME --role write\n",
		ref, data, ref.Workspace, ref.Project)
	return nil
}

// shellQuote quotes s for a POSIX shell unless it is plainly safe.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
