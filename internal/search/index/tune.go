package index

import (
	"runtime"
	"sync"

	"github.com/blevesearch/bleve/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// TuneProcess sets the two settings of bleve and zap that are not per index
// but per process: package variables of the libraries, read by every index
// the process opens. So they are set once, by the application at start
// (before the first index opens), not by a constructor that a test or a
// second registry may call at any time. It is idempotent.
//
// Segment buffers: zapx (v17, the segment format scorch writes) sizes the
// buffer of a new in-memory segment from the previous segment's bytes per
// document times (documents + 100). A refresh batch of one document then
// allocates about a hundred times its segment, and the segment keeps that
// whole buffer for as long as it lives: 32 refreshes of 64 KB entries held
// 470 bytes of heap per byte of text (120–150× on a real server: threat 2 of
// Stufe 5 in AUSBAUSTUFEN.md). Without the estimate the buffer grows by
// doubling, so a segment keeps at most about twice its size.
// TestRefreshSegmentsKeepNoSpareBuffer pins this.
//
// Analysis workers: bleve analyzes the documents of every index of the
// process in one queue of goroutines, four by default. On two cores a large
// batch of one project (64 KB entries of unique words) took both, and every
// other project's recall waited in Go's run queue behind it for tens of
// milliseconds. Half the cores (at least one) keeps the others free for
// requests, at the cost of slower builds on small machines.
func TuneProcess() {
	tuneOnce.Do(func() {
		zap.NewSegmentBufferAvgBytesPerDocFactor = 0
		bleve.Config.SetAnalysisQueueSize(analysisWorkers())
	})
}

var tuneOnce sync.Once

// analysisWorkers is how many goroutines analyze documents for every index
// of the process: half the cores, at least one.
func analysisWorkers() int { return max(1, runtime.GOMAXPROCS(0)/2) }
