//go:build last

// One load phase: every agent's loop for the given time, and what they
// measured together.

package lasttest

import (
	"slices"
	"sync"
	"syscall"
	"time"
)

// result is one load phase: latencies and errors per tool, successful writes.
type result struct {
	dur      time.Duration
	lat      map[string][]time.Duration
	errs     map[string]int
	firstErr string
	written  map[string]int // successful remember calls per project
	connWall time.Duration
	cpu      time.Duration
	acks     []quittung  // acknowledged remembers
	abo      *abErgebnis // what the subscribers heard (-last.abonnenten)
}

func (r result) rememberRate() float64 { return float64(len(r.lat["remember"])) / r.dur.Seconds() }

// cpuPerCall is the process's CPU time per tool call in µs.
func (r result) cpuPerCall() float64 { return float64(r.cpu.Microseconds()) / float64(r.calls()) }

// calls counts the tool calls of the load phase (session setup excluded),
// setup 5's reviewer's included.
func (r result) calls() int {
	n := 0
	for _, tool := range slices.Concat(tools[1:], reviewerTools) {
		n += len(r.lat[tool])
	}
	return n
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drive runs every agent's loop for d and merges what they measured.
func drive(agents []*agent, d time.Duration) result {
	for _, a := range agents {
		for _, tool := range tools[1:] {
			a.lat[tool] = a.lat[tool][:0]
		}
		a.lat[recallMix] = a.lat[recallMix][:0]
		a.acks = a.acks[:0]
		clear(a.err)
	}
	var mu sync.Mutex
	written := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := a.work(deadline)
			mu.Lock()
			defer mu.Unlock()
			for p, n := range w {
				written[p] += n
			}
		}()
	}
	wg.Wait()
	res := result{dur: time.Since(start), lat: map[string][]time.Duration{}, errs: map[string]int{}, written: written}
	for _, a := range agents {
		for tool, l := range a.lat {
			res.lat[tool] = append(res.lat[tool], l...)
		}
		res.acks = append(res.acks, a.acks...)
		for tool, n := range a.err {
			res.errs[tool] += n
		}
		if res.firstErr == "" {
			res.firstErr = a.firstErr
		}
	}
	return res
}
