package app

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	t.Setenv("GOGC", "")
	if got := TuneGC(); got != 100 {
		t.Errorf("with GOGC set, TuneGC reports %d, want the runtime's 100 left alone", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the target became %d", got)
	}
}

func TestTuneGCDefault(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	if v, set := os.LookupEnv("GOGC"); set {
		t.Skipf("GOGC=%q is set for this test run", v)
	}
	if got := TuneGC(); got != DefaultGCPercent {
		t.Errorf("TuneGC = %d, want %d", got, DefaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("target after TuneGC is %d, want %d", got, DefaultGCPercent)
	}
}
