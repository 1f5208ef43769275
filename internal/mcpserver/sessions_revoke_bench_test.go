package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// BenchmarkRevokeSweep is one revocation sweep over 1,000 open listen
// streams, none revoked: held by 1,000 keys (one check each) or by 125 keys
// at their default limit of 8 streams (125 checks).
func BenchmarkRevokeSweep(b *testing.B) {
	for _, keys := range []int{1000, 125} {
		b.Run(fmt.Sprintf("streams=1000/keys=%d", keys), func(b *testing.B) {
			env := servicetest.New(b, service.Options{})
			srv := New(env.Svc, Options{Logger: debugLogger(&logBuffer{})})
			ref := memory.ProjectRef{Workspace: "ws", Project: "p"}
			ids := make([]int64, keys)
			for i := range ids {
				_, k, err := env.Svc.CreateKey(context.Background(), ref, fmt.Sprintf("agent-%d", i), memory.RoleRead)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = k.ID
			}
			srv.ids.mu.Lock()
			srv.ids.listens = make(map[uint64]*listenEntry)
			for n := range 1000 {
				who := owner(strconv.FormatInt(ids[n%keys], 10))
				srv.ids.listens[uint64(n)] = &listenEntry{owner: who, cancel: func() {}}
			}
			srv.ids.mu.Unlock()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				srv.sweepRevoked(context.Background())
			}
			b.StopTimer()
			if got := srv.ids.revokedListens.Load(); got != 0 {
				b.Fatalf("%d listen streams ended, none was revoked", got)
			}
		})
	}
}
