package app

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/service"
)

// BenchmarkRememberEmbeddings measures remember throughput with embeddings
// off and on (an endpoint answering 384-dimension vectors after 20 ms):
// parallel remembers over 1,000 slugs, the worker embedding behind them.
//
//	go test -run '^$' -bench RememberEmbeddings -count 5 ./internal/app/
func BenchmarkRememberEmbeddings(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on-20ms"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Config: config.Config{Storage: config.Storage{DataDir: b.TempDir()}, Limits: config.Limits{BudgetOff: true}}, Logger: quietLog()}
			if on {
				ep := embedtest.New(384)
				ep.SetDelay(20 * time.Millisecond)
				b.Cleanup(ep.Close)
				cfg.Embeddings.URL, cfg.Embeddings.Model = ep.URL, "bench"
			}
			a, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			token, err := a.Svc.Bootstrap(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			c, err := a.Svc.Authenticate(context.Background(), token)
			if err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(4)
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					req := service.RememberRequest{Slug: fmt.Sprintf("bench/e%04d", i%1000),
						Content: fmt.Sprintf("Note %d about nightly backups, the release plan and the database choice.", i)}
					if _, err := a.Svc.Remember(context.Background(), c, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			// CPU per remember (the whole process: server, worker and the
			// test endpoint) is steadier than wall time on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if on {
				b.ReportMetric(float64(a.Embed.Stats().Embedded)/float64(b.N), "vectors/op")
			}
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
