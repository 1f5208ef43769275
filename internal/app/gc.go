package app

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target when GOGC is not set.
//
// Go's default of 100 collects whenever the heap has doubled. Munin's live
// heap is small (tens of MiB: sessions, indexes) while every request
// allocates JSON, so at 100 the collector took 7–10 % of the CPU of a
// write-heavy load test and CPU per remember fell by about a fifth at 400
// (AUSBAUSTUFEN 2.4). The price is a heap that may grow to five times the
// live data before a collection; GOGC=100 in the environment restores Go's
// default.
const DefaultGCPercent = 400

// TuneGC sets the collector's target to DefaultGCPercent unless the GOGC
// environment variable chose one, and returns the target now in effect.
func TuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		old := debug.SetGCPercent(100)
		debug.SetGCPercent(old)
		return old
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}
