package index

import (
	"context"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestSettlePrefersDoneOverDeadline: a round that is applied already counts
// as settled even when the search's wait has run out too. select chooses at
// random between two ready cases, so a hundred tries would find the wrong
// one (this flaked the queued-refresh tests above on a slow machine).
func TestSettlePrefersDoneOverDeadline(t *testing.T) {
	p := New(Config{Ref: memory.ProjectRef{Workspace: "ws", Project: "alpha"}, Path: t.TempDir()})
	t.Cleanup(p.Close)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	done := &round{done: make(chan struct{})}
	close(done.done)
	p.qmu.Lock()
	p.applying = done
	p.qmu.Unlock()
	defer func() { p.qmu.Lock(); p.applying = nil; p.qmu.Unlock() }()
	for i := range 100 {
		if err := p.settle(expired); err != nil {
			t.Fatalf("try %d: settle on an applied round: %v, want nil", i, err)
		}
	}
}
