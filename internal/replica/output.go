package replica

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// tailLines is how many of the sidecar's last output lines an error quotes.
const tailLines = 8

// maxLineBytes caps one forwarded line; longer lines are cut.
const maxLineBytes = 4096

// output forwards the sidecar's log lines to Munin's logger and keeps the
// last few for error messages (a sidecar that cannot start says why there).
type output struct {
	logger *slog.Logger
	mu     sync.Mutex
	tail   []string
}

// forward copies lines from r until EOF. Litestream logs in slog's text
// format ("time=… level=WARN msg=…"): warnings and errors are logged as
// warnings, everything else at debug level. Litestream does not print
// credentials; replica URLs and paths are all it names.
func (o *output) forward(r io.Reader, stream string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > maxLineBytes {
			line = line[:maxLineBytes] + "…"
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		o.remember(line)
		lvl := slog.LevelDebug
		if isWarning(line) {
			lvl = slog.LevelWarn
		}
		o.logger.Log(context.Background(), lvl, "litestream", "stream", stream, "line", line)
	}
	// A line over 1 MiB stops the scanner; keep draining so the child never
	// blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}

// isWarning reports whether a litestream log line is a warning or an error.
// Its complaint about an empty config is expected: Munin registers databases
// over the socket.
func isWarning(line string) bool {
	if strings.Contains(line, "no databases specified") {
		return false
	}
	return strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") ||
		strings.HasPrefix(line, "Error:")
}

func (o *output) remember(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tail = append(o.tail, line)
	if len(o.tail) > tailLines {
		o.tail = o.tail[len(o.tail)-tailLines:]
	}
}

// last returns the remembered lines joined by " | ", for error messages.
func (o *output) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.tail, " | ")
}
