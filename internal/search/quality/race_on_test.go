//go:build race

package quality

// raceEnabled: the race detector slows indexing ~5-10x; TestRecallFusion,
// a measurement of fourteen recall setups that claims nothing about concurrency,
// skips under it (TestRecallQuality still runs both paths with it), and so does
// TestSimilarQuality's setup with generated filler entries.
const raceEnabled = true
