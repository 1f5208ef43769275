package app

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
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

// inFreshProcess runs the calling test alone in a new copy of the test
// binary and reports whether this is that copy: the collector's settings are
// the process's, and another test's (TuneGC's follower) would blur them.
func inFreshProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv("MUNIN_GC_CHILD") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "MUNIN_GC_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fresh process: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	return false
}

// churn allocates n bytes in 64 KiB pieces that die at once, and returns
// how many collections ran meanwhile.
func churn(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n / (64 << 10) {
		sink = make([]byte, 64<<10)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

var sink []byte

// keepLive allocates n bytes that stay reachable until the test ends.
func keepLive(t *testing.T, n int) {
	live := make([][]byte, n>>20)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	t.Cleanup(func() { runtime.KeepAlive(live) })
}

// TestMemoryLimitBelowLiveHeapDoesNotThrash: a live heap eight times the
// configured limit (a large project's index) raises the limit in force, so
// the collector runs about as often as at GOGC=400, not back to back (a
// fixed limit under the live heap makes every allocation start one).
func TestMemoryLimitBelowLiveHeapDoesNotThrash(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	debug.SetGCPercent(DefaultGCPercent)
	stop := followLiveHeap(8 << 20)
	defer stop()
	keepLive(t, 64<<20)
	runtime.GC()
	runtime.GC() // the follower has seen the live heap
	const allocated = 1 << 30
	gcs := churn(allocated)
	// limitOverLive=3: one collection per 128 MiB allocated, 8 for 1 GiB.
	t.Logf("%d collections for %d MiB allocated over a 64 MiB live heap, limit now %d MiB", gcs, allocated>>20, debug.SetMemoryLimit(-1)>>20)
	if gcs > 24 {
		t.Fatalf("%d collections for 1 GiB allocated over a 64 MiB live heap: the limit thrashes", gcs)
	}
}

// TestMemoryLimitKeepsASmallHeapSmall: with a live heap of about 10 MiB,
// GOGC=400 alone lets the heap grow to about 50 MiB; the follower keeps the
// 48 MiB limit (three times the live heap is below it), and the heap's goal
// stays under it. Allocations while the collector marks count as live for
// that collection and may raise the limit for a while, so the test looks
// after a collection with nothing allocating.
func TestMemoryLimitKeepsASmallHeapSmall(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	debug.SetGCPercent(DefaultGCPercent)
	const floor = 48 << 20
	stop := followLiveHeap(floor)
	defer stop()
	keepLive(t, 8<<20)
	churn(128 << 20)
	// The follower's cleanup after the churn's last collection may run
	// while the next collection marks; its new tick is then allocated black
	// and survives that collection, so a quiet process needs a few more
	// collections before the follower looks again.
	var limit, want int64
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond)
		if limit, want = debug.SetMemoryLimit(-1), limitFor(floor, liveHeap()); limit == want {
			break
		}
	}
	if limit != want {
		t.Fatalf("limit %d MiB after 100 quiet collections, want %d MiB (live %d MiB)", limit>>20, want>>20, liveHeap()>>20)
	}
	runtime.GC() // a collection under the settled limit sets the goal
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	t.Logf("live %d MiB, heap goal %d MiB under a %d MiB limit (GOGC=400 alone: %d MiB)", live>>20, goal>>20, floor>>20, 5*live>>20)
	if want != floor || 5*live <= floor {
		t.Fatalf("live heap %d MiB: the test wants one under a third and over a fifth of %d MiB", live>>20, floor>>20)
	}
	if goal > floor {
		t.Fatalf("heap goal %d MiB above the %d MiB limit", goal>>20, floor>>20)
	}
}

// liveHeap is the live heap the last collection left.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestLimitFor(t *testing.T) {
	for _, c := range []struct {
		floor int64
		live  uint64
		want  int64
	}{
		{64 << 20, 10 << 20, 64 << 20},
		{64 << 20, 30 << 20, 90 << 20},
		{64 << 20, math.MaxUint64, math.MaxInt64},
	} {
		if got := limitFor(c.floor, c.live); got != c.want {
			t.Errorf("limitFor(%d, %d) = %d, want %d", c.floor, c.live, got, c.want)
		}
	}
}
