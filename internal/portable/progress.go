package portable

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// DefaultProgressInterval is how often a long job prints a plain progress
// line when its output is not a terminal.
const DefaultProgressInterval = 5 * time.Second

// progressStyle decides how a job's progress is shown. The zero value is
// what the commands use: a bar on a terminal, else a plain line every
// DefaultProgressInterval.
type progressStyle struct {
	// terminal reports whether w is a terminal (default: isTerminal).
	terminal func(w io.Writer) bool
	// interval is the least time between two plain lines (default
	// DefaultProgressInterval).
	interval time.Duration
	// now is the clock of the plain lines (default time.Now).
	now func() time.Time
}

// isTerminal reports whether w is a file (an *os.File, typically stderr)
// open on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress counts the steps of one job (the entries of one project) on w.
// A terminal gets a bar redrawn in place with '\r'; anything else — a file,
// a pipe, a log — gets a plain line at most once per interval and a final
// line from finish, as a hundred carriage-return updates are noise there.
type progress struct {
	bar *progressbar.ProgressBar // nil: plain lines

	mu          sync.Mutex // the callers' callbacks may run on any goroutine
	w           io.Writer
	what, unit  string
	done, total int
	interval    time.Duration
	now         func() time.Time
	start, last time.Time
}

// newProgress starts the progress of total steps of what (a project, say),
// counted in unit ("entries"), on w.
func newProgress(w io.Writer, what, unit string, total int) *progress {
	return progressStyle{}.start(w, what, unit, total)
}

// start is newProgress with the style s.
func (s progressStyle) start(w io.Writer, what, unit string, total int) *progress {
	if s.terminal == nil {
		s.terminal = isTerminal
	}
	if s.interval <= 0 {
		s.interval = DefaultProgressInterval
	}
	if s.now == nil {
		s.now = time.Now
	}
	p := &progress{w: w, what: what, unit: unit, total: total, interval: s.interval, now: s.now}
	if s.terminal(w) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what+" "+unit),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		return p
	}
	p.start = p.now()
	p.last = p.start
	return p
}

// add counts n more steps done.
func (p *progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if t := p.now(); t.Sub(p.last) >= p.interval {
		p.last = t
		p.line("")
	}
}

// finish ends the progress: the bar is filled, or the final plain line is
// printed with the time the job took.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(fmt.Sprintf(", done in %v", p.now().Sub(p.start).Round(time.Millisecond)))
}

// line prints "acme/alpha: 12000/100000 entries (12%)" and suffix.
func (p *progress) line(suffix string) {
	pct := 100
	if p.total > 0 {
		pct = p.done * 100 / p.total
	}
	fmt.Fprintf(p.w, "%s: %d/%d %s (%d%%)%s\n", p.what, p.done, p.total, p.unit, pct, suffix)
}
