package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/term"

	"munin/internal/app"
	"munin/internal/reqlog"
)

// newLogger is the logger of a serving process (serve, stdio): text lines
// on w, every message and value through reqlog.Safe, so that no key and no
// forged level token reaches the log whatever a layer logs.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(reqlog.Safe(slog.NewTextHandler(w, nil)))
}

// privateDataDir makes an existing data directory private (0700) and says
// so once: a fresh clone brings ./data as 0755, while docs/security.md#defaults promises
// that only the server's user can read the memory. Directories Munin creates
// are private already (app.PrivateFiles). A directory that cannot be changed
// (owned by another user) is a warning, not a refusal to start.
func privateDataDir(dir string, log *slog.Logger) error {
	if runtime.GOOS == "windows" {
		return nil // no Unix modes; access is the ACL's business
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil // missing: created private; anything else: app.Open names it
	}
	was := fi.Mode().Perm()
	if was&0o077 == 0 {
		return nil
	}
	now := was &^ 0o077
	if err := os.Chmod(dir, now); err != nil {
		log.Warn("data directory is open to other users and could not be made private; chmod 700 it", "dir", dir, "mode", fmt.Sprintf("%04o", was), "err", err)
		return nil
	}
	log.Info("data directory was open to other users; made it private", "dir", dir, "was", fmt.Sprintf("%04o", was), "now", fmt.Sprintf("%04o", now))
	return nil
}

// firstKeysFile is the file in the data directory that receives the first
// start's keys when stdout is no terminal.
const firstKeysFile = "first-keys.txt"

// isTerminal reports whether w is a terminal. Tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// welcome runs the first start (app.Welcome). The two keys it creates are
// printed only to a terminal: under systemd or in a container stdout is the
// log, kept and shipped where the keys have no business. Otherwise they go
// to a file only the server's user can read, and the log says where.
func welcome(ctx context.Context, a *app.App, cfg app.Config, stdout io.Writer, base string) error {
	if isTerminal(stdout) {
		return a.Welcome(ctx, stdout, base)
	}
	var text strings.Builder
	if err := a.Welcome(ctx, &text, base); err != nil || text.Len() == 0 {
		return err
	}
	path := filepath.Join(cfg.Storage.DataDir, firstKeysFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := writePrivate(path, text.String()); err != nil {
		return fmt.Errorf("first start: writing the new keys to %s: %w; they are lost (only their hashes are stored): create keys with munin key create", path, err)
	}
	cfg.Logger.Info("first start: created default/default and two keys; stdout is no terminal, so they are in a file only this user can read — store them like passwords, then delete it", "file", path)
	return nil
}

// writePrivate writes text to a file of mode 0600 at path. It is written
// beside it first and renamed into place, so whoever waits for the file
// (a script taking the keys) never reads half of it; the temporary name is
// created exclusively after removing what was there, so neither an old
// file's mode nor a planted symlink decides where the keys go.
func writePrivate(path, text string) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}
