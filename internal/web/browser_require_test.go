package web

import (
	"os"
	"testing"
)

// requireBrowserEnv makes a missing browser a failure instead of a skip,
// as MUNIN_REQUIRE_LITESTREAM does for Litestream: CI installs Chromium and
// sets it, so that a failed install turns CI red instead of silently
// skipping every browser test.
const requireBrowserEnv = "MUNIN_REQUIRE_BROWSER"

// noBrowser ends a browser test that found no Chromium: skipped, or failed
// with MUNIN_REQUIRE_BROWSER=1.
func noBrowser(t testing.TB) {
	t.Helper()
	const msg = "chromium not installed: apt-get install chromium to run the browser tests"
	if os.Getenv(requireBrowserEnv) == "1" {
		t.Fatalf("%s=1 but %s", requireBrowserEnv, msg)
	}
	t.Skip(msg)
}

// sweepsEnv set to "off" skips the page-by-page sweeps (layout at three
// widths, axe-core at two): they test rendering, which neither -race nor
// the cluster hop changes, so CI runs them once, in its plain go test.
const sweepsEnv = "MUNIN_BROWSER_SWEEPS"

// sweepsOff skips a page-by-page sweep when sweepsEnv says so.
func sweepsOff(t testing.TB) {
	t.Helper()
	if os.Getenv(sweepsEnv) == "off" {
		t.Skipf("%s=off: the page sweeps ran in CI's plain go test", sweepsEnv)
	}
}

// flowsEnv set to "off" skips the browser flows as well, except those that
// watch the server work concurrently with the page (newLiveChrome): CI's
// race step sets it, since the flows ran in its plain go test and the
// race detector finds nothing in a page being clicked through that the
// handlers' own tests with many goroutines do not (≈ 110 s of that step).
const flowsEnv = "MUNIN_BROWSER_FLOWS"

// flowsOff skips a browser flow when flowsEnv says so.
func flowsOff(t testing.TB) {
	t.Helper()
	if os.Getenv(flowsEnv) == "off" {
		t.Skipf("%s=off: the browser flows ran in CI's plain go test", flowsEnv)
	}
}
