package quality

import (
	"os"
	"testing"

	"munin/internal/search"
)

// TestMain tunes the process as the application does at start, so that the
// recall benchmarks (BenchmarkRecall10k, BenchmarkRecall10kStore) measure
// what the server runs.
func TestMain(m *testing.M) {
	search.TuneProcess()
	os.Exit(m.Run())
}
