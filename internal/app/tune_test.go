package app

import (
	"os"
	"os/exec"
	"testing"

	zap "github.com/blevesearch/zapx/v17"
)

// TestOpenTunesTheSearchProcess: the process-wide bleve/zap settings are
// made by no init() and no constructor, so Open is what must make them.
// zap's buffer estimate is the observable one: left at its library default,
// every segment of a refresh keeps a spare buffer of about its own size
// (threat 2 of Stufe 5 in AUSBAUSTUFEN.md). Other tests of this process open
// apps too, so the check runs in a fresh copy of the test binary.
func TestOpenTunesTheSearchProcess(t *testing.T) {
	if os.Getenv("MUNIN_TUNE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenTunesTheSearchProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MUNIN_TUNE_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fresh process: %v\n%s", err, out)
		}
		return
	}
	if zap.NewSegmentBufferAvgBytesPerDocFactor == 0 {
		t.Fatal("zap is tuned before anything opened an app: an init() still sets it")
	}
	startServer(t)
	if got := zap.NewSegmentBufferAvgBytesPerDocFactor; got != 0 {
		t.Fatalf("after Open zap's NewSegmentBufferAvgBytesPerDocFactor is %v, want 0 (search.TuneProcess not called)", got)
	}
}
