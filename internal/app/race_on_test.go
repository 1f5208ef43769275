//go:build race

package app

// raceEnabled: the race detector slows the server ~5-10x; tests that open
// thousands of sessions scale down so the idle TTL does not fire mid-setup.
const raceEnabled = true
