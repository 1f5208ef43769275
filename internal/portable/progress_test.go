package portable

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/embed"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func notTerminal(io.Writer) bool { return false }

// Not on a terminal, progress is plain lines, at most one per interval, and
// a final line: no carriage return, no bar.
func TestProgressPlainLines(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := progressStyle{terminal: notTerminal, interval: 5 * time.Second, now: clock.now}.start(&out, "acme/alpha", "entries", 100000)
	// 100 steps of 1,000 entries, one second apart: a line every fifth step.
	for range 100 {
		clock.advance(time.Second)
		p.add(1000)
	}
	clock.advance(500 * time.Millisecond)
	p.finish()
	text := out.String()
	if strings.ContainsAny(text, "\r\x1b") {
		t.Fatalf("plain progress holds a carriage return or escape:\n%q", text)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 21 {
		t.Fatalf("%d lines, want 20 (one per 5 s of 100 s) and a final one:\n%s", len(lines), text)
	}
	if lines[0] != "acme/alpha: 5000/100000 entries (5%)" || lines[11] != "acme/alpha: 60000/100000 entries (60%)" {
		t.Fatalf("lines 1 and 12 are %q and %q", lines[0], lines[11])
	}
	if last := lines[20]; last != "acme/alpha: 100000/100000 entries (100%), done in 1m40.5s" {
		t.Fatalf("final line %q", last)
	}
}

// A job shorter than the interval prints only its final line; an empty one
// counts as complete.
func TestProgressShortAndEmptyJobs(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	style := progressStyle{terminal: notTerminal, now: clock.now} // default interval
	p := style.start(&out, "w/p", "vectors", 40)
	for range 4 {
		clock.advance(time.Second)
		p.add(10)
	}
	p.finish()
	style.start(&out, "w/empty", "entries", 0).finish()
	if want := "w/p: 40/40 vectors (100%), done in 4s\nw/empty: 0/0 entries (100%), done in 0s\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

// On a terminal (the decision injected) the bar is drawn in place as before.
func TestProgressBarOnTerminal(t *testing.T) {
	var out bytes.Buffer
	p := progressStyle{terminal: func(io.Writer) bool { return true }}.start(&out, "acme/alpha", "entries", 50)
	for range 50 {
		p.add(1)
	}
	p.finish()
	text := out.String()
	if !strings.Contains(text, "\r") || !strings.Contains(text, "acme/alpha entries") || !strings.Contains(text, "(50/50)") || !strings.Contains(text, "100%") {
		t.Fatalf("terminal output %q is not a bar at 50/50", text)
	}
	if strings.Contains(text, "done in") {
		t.Fatalf("terminal output %q holds a plain line", text)
	}
}

// A buffer or a regular file is not a terminal.
func TestIsTerminalOfFilesAndBuffers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) || isTerminal(io.Discard) {
		t.Fatal("a file, a buffer or io.Discard taken for a terminal")
	}
}

// Steps counted from many goroutines all arrive (run with -race).
func TestProgressConcurrentAdds(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := progressStyle{terminal: notTerminal, interval: time.Second, now: clock.now}.start(&out, "w/p", "entries", 8000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				clock.advance(time.Millisecond)
				p.add(1)
			}
		})
	}
	wg.Wait()
	p.finish()
	// The goroutines interleave, so which count each line shows varies; the
	// lines are at most one per second of the 8 s and the last one is complete.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) > 9 || lines[len(lines)-1] != "w/p: 8000/8000 entries (100%), done in 8s" {
		t.Fatalf("%d lines, want at most 8 and a final one with 8000/8000:\n%s", len(lines), out.String())
	}
}

var plainLine = regexp.MustCompile(`^\S+: \d+/\d+ (entries|vectors) \(\d+%\)(, done in \S+)?$`)

// checkPlain fails unless out is plain progress lines and holds want.
func checkPlain(t *testing.T, out, want string) {
	t.Helper()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("progress into a buffer holds a carriage return or escape:\n%q", out)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !plainLine.MatchString(l) {
			t.Fatalf("progress line %q is not plain", l)
		}
	}
	if !strings.Contains(out, want) {
		t.Fatalf("progress %q lacks %q", out, want)
	}
}

// munin reindex writing into a file or a pipe prints plain lines, not a bar.
func TestReindexProgressIntoAFileIsPlain(t *testing.T) {
	s := openStore(t, t.TempDir())
	ref := ensure(t, s, "acme", "backend")
	for i := range 30 {
		write(t, s, ref, memory.Write{Slug: fmt.Sprintf("e/%02d", i), Title: "t", Content: "c"})
	}
	var out bytes.Buffer
	if _, err := Reindex(ctx, s, t.TempDir(), nil, &out); err != nil {
		t.Fatal(err)
	}
	checkPlain(t, out.String(), "acme/backend: 30/30 entries (100%), done in")
}

// munin reindex --embeddings likewise.
func TestFillEmbeddingsProgressIntoAFileIsPlain(t *testing.T) {
	s := openStore(t, t.TempDir())
	ref := ensure(t, s, "acme", "backend")
	for i := range 30 {
		write(t, s, ref, memory.Write{Slug: fmt.Sprintf("e/%02d", i), Title: "t", Content: "c"})
	}
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	client, err := embed.NewClient(embed.ClientOptions{URL: ep.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := FillEmbeddings(ctx, s, client, nil, &out)
	if err != nil || len(res) != 1 || res[0].Embedded != 30 {
		t.Fatalf("FillEmbeddings = %+v, %v", res, err)
	}
	checkPlain(t, out.String(), "acme/backend: 30/30 vectors (100%), done in")
}
