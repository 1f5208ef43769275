package search

import (
	"os"
	"testing"
)

// TestMain tunes the process as the application does at start, so that the
// tests and benchmarks measure the registry the server runs
// (TestRefreshSegmentsKeepNoSpareBuffer depends on it).
func TestMain(m *testing.M) {
	TuneProcess()
	os.Exit(m.Run())
}
