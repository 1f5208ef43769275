package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Errors of Restore that a caller acts on.
var (
	// ErrReplicaEmpty: the replica holds nothing (or its location does not
	// exist). A takeover of a workspace that never had a replica starts empty.
	ErrReplicaEmpty = errors.New("replica is empty or does not exist")
	// ErrTXIDNotAvailable: the replica does not reach the requested TXID.
	ErrTXIDNotAvailable = errors.New("replica does not hold the requested txid")
)

// DefaultRestoreAttempts is how often Restore tries when Attempts is zero.
// A stale owner's sidecar may still compact the replica while we list it,
// removing a file we are about to read; a second try sees the new listing.
const DefaultRestoreAttempts = 3

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// TXID restores up to and including this transaction; 0 means the latest.
	TXID uint64
	// Attempts bounds the tries (DefaultRestoreAttempts when zero).
	Attempts int
	// Logger receives retry notices; nil means slog.Default().
	Logger *slog.Logger
}

// restoreResult is what `litestream restore -json` prints.
type restoreResult struct {
	TXID       string `json:"txid"`
	DurationMS int64  `json:"duration_ms"`
}

// Restore rebuilds the database held at replicaURL into outPath with
// `litestream restore -json -integrity-check full` and returns the TXID it
// restored to. outPath must not exist. On failure nothing is left at outPath
// (partial output is removed) and the restore is retried a bounded number of
// times; an empty or missing replica returns ErrReplicaEmpty at once, a
// TXID beyond the replica ErrTXIDNotAvailable. binary "" means Binary().
//
// Without opts.TXID the returned TXID is the newest one Litestream saw when
// it planned the restore; a stale writer appending meanwhile can only make the
// file newer, never older.
func Restore(ctx context.Context, binary, replicaURL, outPath string, opts RestoreOptions) (uint64, error) {
	if binary == "" {
		b, err := Binary()
		if err != nil {
			return 0, err
		}
		binary = b
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultRestoreAttempts
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	out, err := filepath.Abs(outPath)
	if err != nil {
		return 0, fmt.Errorf("restore output %s: %w", outPath, err)
	}
	for _, p := range []string{out, out + "-wal", out + "-shm"} {
		if _, err := os.Lstat(p); err == nil {
			return 0, fmt.Errorf("restore %s into %s: %s already exists; refusing to overwrite", replicaURL, out, p)
		}
	}
	args := []string{"restore", "-json", "-integrity-check", "full", "-o", out}
	if opts.TXID != 0 {
		args = append(args, "-txid", fmt.Sprintf("%016x", opts.TXID))
	} else {
		// Exit 0 without output when there is nothing to restore: "empty" is
		// then told apart without matching an error message.
		args = append(args, "-if-replica-exists")
	}
	args = append(args, replicaURL)

	var lastErr error
	for attempt := 1; attempt <= opts.Attempts; attempt++ {
		txid, err := restoreOnce(ctx, binary, args, out, opts.TXID)
		if err == nil {
			return txid, nil
		}
		removeOutput(out)
		lastErr = fmt.Errorf("restore %s into %s: %w", replicaURL, out, err)
		if errors.Is(err, ErrReplicaEmpty) || errors.Is(err, ErrTXIDNotAvailable) || ctx.Err() != nil {
			return 0, lastErr
		}
		if attempt < opts.Attempts {
			opts.Logger.Warn("litestream restore failed; retrying", "attempt", attempt, "err", lastErr)
			select {
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			case <-ctx.Done():
				return 0, lastErr
			}
		}
	}
	return 0, fmt.Errorf("%w (after %d attempts)", lastErr, opts.Attempts)
}

// restoreOnce runs the command once and interprets its answer.
func restoreOnce(ctx context.Context, binary string, args []string, out string, txid uint64) (uint64, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{max: 16 << 10, buf: &stderr}
	err := cmd.Run()
	msg := lastErrorLine(stderr.String())
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if strings.Contains(msg, "no matching backup files available") {
			if txid != 0 {
				return 0, fmt.Errorf("%w: txid %016x: %s", ErrTXIDNotAvailable, txid, msg)
			}
			return 0, fmt.Errorf("%w: %s", ErrReplicaEmpty, msg)
		}
		return 0, fmt.Errorf("litestream restore: %v: %s", err, msg)
	}
	if len(bytes.TrimSpace(stdout.Bytes())) == 0 {
		if _, statErr := os.Stat(out); txid == 0 && os.IsNotExist(statErr) {
			return 0, ErrReplicaEmpty
		}
		return 0, fmt.Errorf("litestream restore printed no result: %s", msg)
	}
	var res restoreResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return 0, fmt.Errorf("litestream restore printed %q: %w", stdout.String(), err)
	}
	got, err := strconv.ParseUint(res.TXID, 16, 64)
	if err != nil || got == 0 {
		return 0, fmt.Errorf("litestream restore printed txid %q", res.TXID)
	}
	if _, err := os.Stat(out); err != nil {
		return 0, fmt.Errorf("litestream restore reported success but wrote no file: %w", err)
	}
	return got, nil
}

// lastErrorLine picks Litestream's "Error: …" line, else the last line.
func lastErrorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "Error: ") {
			return strings.TrimPrefix(lines[i], "Error: ")
		}
	}
	return lines[len(lines)-1]
}

// removeOutput removes what a failed restore may have left.
func removeOutput(out string) {
	for _, p := range []string{out, out + ".tmp", out + "-wal", out + "-shm", out + "-journal", out + "-txid"} {
		_ = os.Remove(p)
	}
}

// limitedBuffer keeps the first max bytes written (enough for the error line
// Litestream prints; restore logs little).
type limitedBuffer struct {
	max int
	buf *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
