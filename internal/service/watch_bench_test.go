package service_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// BenchmarkWatchFanOut: one remember and the time until every watcher of
// its project heard it, with 0, 100 and 1,000 watchers (one feed read per
// commit serves them all). ns/op is write plus delivery to the last.
func BenchmarkWatchFanOut(b *testing.B) {
	for _, n := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			env := servicetest.New(b, service.Options{BudgetOff: true, RecallRate: -1})
			_, a := env.Key(b, "acme", "one", "wa", memory.RoleWrite)
			var heard atomic.Int64
			done := make(chan struct{}, 1)
			want := atomic.Int64{}
			for range n {
				stop, err := env.Svc.Watch(a, memory.ProjectRef{Workspace: "acme", Project: "one"}, func(ev service.WatchEvent) {
					if heard.Add(int64(len(ev.Changes))) == want.Load() {
						done <- struct{}{}
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
			}
			b.ResetTimer()
			for i := range b.N {
				want.Store(int64(n) * int64(i+1))
				feedWrite(b, env.Svc, a, "acme/one", fmt.Sprintf("s%d", i%50))
				if n > 0 {
					<-done
				}
			}
		})
	}
}
