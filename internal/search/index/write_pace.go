package index

import (
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Persist pace. Scorch's persister naps (Config.PersistNap) so that the
// segments of many refresh batches become one file, but its merger wakes it
// from every nap as soon as it has planned its merges, which it does after
// every persist: under a steady stream of small batches the persister
// wrote a file and the merger merged files about 30 times a second instead
// of once (a test index fed a batch every 3 ms: 1 nap completed, 166
// broken in 5 s; bleve v2.6.3, persister.go pausePersisterForMergerCatchUp).
// Each file is opened, written, synced and soon merged again.
//
// The callback named persistPaceCallback makes the persister rest for
// persistPace after each persist, before it looks for the next: searches
// meanwhile read the newer batches from memory (they see every batch at
// once, persisted or not: unsafe_batch), and a crash loses nothing the
// database holds. BenchmarkMixed500 (32 agents on 500 entries, 30 %
// writes) with 0 / 30 / 100 ms: CPU per call, median of 8, 120 / 112 /
// 106 µs, recall p99 unchanged; the load test's misch against the same
// server without it, 5 paired rounds: 0.94 server CPU per call, 1.05 calls
// per second (2026-12-04, load 13-16, issue 27). A full
// second without the merger's wake-up (tried with a patched bleve) cost as
// much in searches over more in-memory segments as it saved.
//
// An index rests so when its scorch config names persistPaceCallback under
// "eventCallbackName" (scorchConfig), which it does unless its nap is
// shorter than the pace. A closing index wakes its resting
// persister (EventKindCloseStart), so Close does not wait for the rest.
const (
	persistPace         = 100 * time.Millisecond
	persistPaceCallback = "munin-persist-pace"
)

// resting maps a *scorch.Scorch whose persister rests to the channel that
// wakes it.
var resting sync.Map

func init() {
	scorch.RegistryEventCallbacks[persistPaceCallback] = paceEvent
}

// paceEvent is the scorch event callback: it rests after each persist and
// wakes a resting persister when its index starts to close. Every other
// event goes on unchanged (true: a pre-merge check lets the merge run).
func paceEvent(e scorch.Event) bool {
	switch e.Kind {
	case scorch.EventKindPersisterProgress:
		wake := make(chan struct{})
		resting.Store(e.Scorch, wake)
		t := time.NewTimer(persistPace)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
		}
		resting.CompareAndDelete(e.Scorch, wake)
	case scorch.EventKindCloseStart:
		if wake, ok := resting.LoadAndDelete(e.Scorch); ok {
			close(wake.(chan struct{}))
		}
	}
	return true
}
