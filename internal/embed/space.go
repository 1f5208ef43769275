package embed

import (
	"sync"

	"munin/internal/memory"
)

// space is the worker state of one workspace.
type space struct {
	name string
	wake chan struct{} // capacity 1: a pending wake-up is enough

	mu      sync.Mutex
	pending map[memory.ProjectRef]map[string]struct{} // slugs written since taken
	npend   int
	scan    bool // look for everything missing, not only the pending slugs

	skip    map[string]struct{} // worker goroutine only
	project string              // Fill of one project; "" for the whole workspace
}

// take removes up to n pending slugs of one project.
func (sp *space) take(n int) (memory.ProjectRef, []string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for ref, slugs := range sp.pending {
		out := make([]string, 0, min(n, len(slugs)))
		for slug := range slugs {
			if len(out) == n {
				break
			}
			out = append(out, slug)
			delete(slugs, slug)
		}
		sp.npend -= len(out)
		if len(slugs) == 0 {
			delete(sp.pending, ref)
		}
		return ref, out
	}
	return memory.ProjectRef{}, nil
}

// needScan reports the scan flag.
func (sp *space) needScan() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.scan
}

func (sp *space) setScan(on bool) {
	sp.mu.Lock()
	sp.scan = on
	sp.mu.Unlock()
}

func (sp *space) wakeUp() {
	select {
	case sp.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func newSpace(ws string) *space {
	return &space{name: ws, wake: make(chan struct{}, 1), skip: map[string]struct{}{},
		pending: map[memory.ProjectRef]map[string]struct{}{}}
}
