//go:build race

package rank

// raceEnabled: the race detector slows indexing ~5-10x; the memory tests,
// which index megabytes and claim nothing about concurrency, skip under it.
const raceEnabled = true
