package search

import (
	"runtime"
	"sync"

	"github.com/blevesearch/bleve/v2"
)

// analysisWorkers is how many goroutines analyze documents for every index
// of the process: half the cores, at least one. bleve's default is four, so
// on two cores a large batch of one project (64 KB entries of unique words)
// took both, and every other project's recall waited in Go's run queue
// behind it for tens of milliseconds. Half the cores keeps the others free
// for requests, at the cost of slower builds on small machines.
func analysisWorkers() int { return max(1, runtime.GOMAXPROCS(0)/2) }

var setWorkers sync.Once

// limitAnalysis sets bleve's process-wide analysis queue once.
func limitAnalysis() {
	setWorkers.Do(func() { bleve.Config.SetAnalysisQueueSize(analysisWorkers()) })
}
