package index

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	zap "github.com/blevesearch/zapx/v17"
	bolt "go.etcd.io/bbolt"
)

// TuneProcess sets the settings of bleve, zap and bbolt that are not per index
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
// Bolt pages: scorch keeps each index's list of segments in a bbolt file
// (store/root.bolt), opened with bbolt's package-wide default options, and
// bbolt maps the whole file into memory for as long as the index is open.
// With 4 KiB pages a small project's file held about 540 bytes in 10 pages
// and had grown to 64 KiB, all of it resident once read (the kernel maps a
// file's cached pages around each fault): 59 KiB of RSS per open project,
// the largest part of it (BenchmarkManyProjects, issue 27). With pages of
// boltPageSize it writes about 10 KiB of a file of 32 KiB (bbolt's least),
// the rest a hole. The page size is chosen when a file is made; older files
// keep theirs. TestBoltFilesUseSmallPages pins this.
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
		bolt.DefaultOptions.PageSize = boltPageSize
	})
}

var tuneOnce sync.Once

// boltPageSize is the page size of the bbolt file of a new index: small,
// since the file holds a few hundred bytes (a large index's a few KiB).
const boltPageSize = 1024

// analysisWorkers is how many goroutines analyze documents for every index
// of the process: half the cores, at least one.
func analysisWorkers() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// BuildOffline sets the process up for builds that no server shares (munin
// reindex, which holds the data directory's lock): builds use every core,
// one analysis worker per core and that many batches of a build applied at
// once, unlike the server that TuneProcess keeps responsive (invariant 4,
// docs/architecture.md#invariant-4-projects-do-not-block-each-other); and a
// build keeps its memory bounded (build_offline.go): it records no versions
// and merges into segments of at most offlineSegmentDocs documents, not
// into one. Call it after TuneProcess, while no index is being written
// (bleve closes the old analysis queue).
func BuildOffline() {
	bleve.Config.SetAnalysisQueueSize(runtime.GOMAXPROCS(0))
	buildBatchesAtOnce.Store(int32(runtime.GOMAXPROCS(0)))
	offline.Store(true)
}

// buildBatchesAtOnce is how many batches of a build are applied at once
// besides the one being filled (sizedBatch.applyAsync); 0, the server's
// setting: one after the other, on the build's own goroutine.
var buildBatchesAtOnce atomic.Int32
