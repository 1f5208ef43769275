package app

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultGCPercent is the garbage collector's target when GOGC is not set.
//
// Go's default of 100 collects whenever the heap has doubled. Munin's live
// heap is small (tens of MiB: sessions, indexes) while every request
// allocates JSON, so at 100 the collector took 7–10 % of the CPU of a
// write-heavy load test and CPU per remember fell by about a fifth at 400
// (AUSBAUSTUFEN 2.4). The price is a heap that may grow to five times the
// live data before a collection; DefaultMemoryLimit bounds it while the live
// data is small. GOGC=100 in the environment restores Go's default.
const DefaultGCPercent = 400

// DefaultMemoryLimit is the soft limit on the Go runtime's memory (heap,
// goroutine stacks, the runtime's own) when GOMEMLIMIT is not set.
//
// At GOGC=400 a live heap of 40 MiB lets the heap reach 200 MiB, and Go
// returns what a collection freed to the system only slowly: a server that
// had a thousand small projects recalled held 390 MiB resident for 10–40 MiB
// of live data. Under the limit the collector runs before the heap passes
// it, and the runtime returns freed memory to stay below it. A live heap
// too large for the limit raises it (limitOverLive), so the limit never
// makes the collector run back to back.
const DefaultMemoryLimit = 64 << 20

// limitOverLive is how far above the live heap the limit in force stays:
// after each collection it is max(the configured limit, limitOverLive × the
// live heap). Collections then come at least every (limitOverLive-1) × live
// bytes allocated, at most twice as often as GOGC=400 alone would have them,
// and never back to back, however large a project's live data.
const limitOverLive = 3

// TuneGC sets the collector's target to DefaultGCPercent unless the GOGC
// environment variable chose one, and the soft memory limit to
// DefaultMemoryLimit, raised with the live heap, unless GOMEMLIMIT chose one.
// It returns the target now in effect. Calling it again changes nothing.
func TuneGC() int {
	tuneOnce.Do(func() {
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
			followLiveHeap(DefaultMemoryLimit)
		}
	})
	if _, set := os.LookupEnv("GOGC"); set {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

var tuneOnce sync.Once

// limitFollower keeps the memory limit at max(floor, limitOverLive × live
// heap), looking after every collection.
type limitFollower struct {
	floor   int64
	stopped chan struct{}
	sample  [1]metrics.Sample
}

// followLiveHeap sets the memory limit to floor and raises (or lowers it
// back towards floor) after every collection as the live heap demands. The
// returned func stops following, for tests; the limit stays as last set.
func followLiveHeap(floor int64) (stop func()) {
	f := &limitFollower{floor: floor, stopped: make(chan struct{})}
	f.sample[0].Name = "/gc/heap/live:bytes"
	debug.SetMemoryLimit(floor)
	f.arm()
	var once sync.Once
	return func() { once.Do(func() { close(f.stopped) }) }
}

// gcTick is garbage on purpose: its cleanup runs after the collection that
// found it unreachable. It has a pointer and more than 16 bytes, so that it
// is not batched with other small objects (which could delay its cleanup).
type gcTick struct {
	_ *limitFollower
	_ [3]int64
}

// arm asks to be called after the next collection.
func (f *limitFollower) arm() {
	runtime.AddCleanup(new(gcTick), func(f *limitFollower) { f.afterGC() }, f)
}

// afterGC sets the limit for the live heap the collection left.
func (f *limitFollower) afterGC() {
	select {
	case <-f.stopped:
		return
	default:
	}
	metrics.Read(f.sample[:])
	debug.SetMemoryLimit(limitFor(f.floor, f.sample[0].Value.Uint64()))
	f.arm()
}

// limitFor is the limit for a live heap of live bytes.
func limitFor(floor int64, live uint64) int64 {
	if live > math.MaxInt64/limitOverLive {
		return math.MaxInt64
	}
	return max(floor, int64(live)*limitOverLive)
}
