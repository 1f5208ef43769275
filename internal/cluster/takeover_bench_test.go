package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"munin/internal/cluster/etcdtest"
)

// BenchmarkTakeover measures failover at the etcd level: an owner is partitioned from etcd while a second
// node waits in the workspace's election. Reported (median and max over b.N takeovers):
//   - ka-to-win: from the start of the owner's last successful keepalive to the successor's Campaign
//     returning (what the lease TTL plus etcd's expiry check costs);
//   - cut-to-win: from the partition to the successor's win.
//
// Run: go test -run '^$' -bench Takeover -benchtime 5x ./internal/cluster/
func BenchmarkTakeover(b *testing.B) {
	for _, bc := range []struct {
		members int
		ttl     time.Duration
	}{{1, time.Second}, {1, 2 * time.Second}, {3, 2 * time.Second}} {
		ttl := bc.ttl
		b.Run(fmt.Sprintf("etcd=%d/ttl=%v", bc.members, ttl), func(b *testing.B) {
			c := etcdtest.Start(b, bc.members)
			var kaToWin, cutToWin []time.Duration
			for i := 0; b.Loop(); i++ {
				ka, cut := takeoverOnce(b, c, ttl, i)
				kaToWin, cutToWin = append(kaToWin, ka), append(cutToWin, cut)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(median(kaToWin)), "ms-ka-to-win-p50")
			b.ReportMetric(ms(slices.Max(kaToWin)), "ms-ka-to-win-max")
			b.ReportMetric(ms(median(cutToWin)), "ms-cut-to-win-p50")
			b.Logf("ttl %v: ka-to-win %v, cut-to-win %v", ttl, kaToWin, cutToWin)
		})
	}
}

func takeoverOnce(b *testing.B, c *etcdtest.Cluster, ttl time.Duration, i int) (kaToWin, cutToWin time.Duration) {
	p := newProxy(b, c.Endpoint(0))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws := fmt.Sprintf("ws-%d", i)
	n1, err := Join(ctx, testConfig(b, []string{p.Endpoint()}, fmt.Sprintf("http://127.0.0.1:%d", 10000+2*i), ttl))
	if err != nil {
		b.Fatal(err)
	}
	defer n1.Close()
	n2, err := Join(ctx, testConfig(b, c.Endpoints(), fmt.Sprintf("http://127.0.0.1:%d", 10001+2*i), ttl))
	if err != nil {
		b.Fatal(err)
	}
	defer n2.Close()
	if _, err := n1.Campaign(ctx, ws); err != nil {
		b.Fatal(err)
	}
	won := make(chan time.Time, 1)
	go func() {
		if _, err := n2.Campaign(ctx, ws); err != nil {
			b.Error(err)
		}
		won <- time.Now()
	}()
	waitFor(b, n2, "node 2 queued", func() bool { n2.mu.Lock(); defer n2.mu.Unlock(); return len(n2.owners[ws]) == 2 })
	// Cut at a different phase of the keepalive period (TTL/3) each time, after a few renewals.
	time.Sleep(ttl + time.Duration(i%5)*ttl/15)
	cutAt := time.Now()
	p.Cut()
	at := <-won
	<-n1.Done()
	n1.mu.Lock()
	reason, lastKA := n1.lostReason, n1.until.Add(-n1.window)
	n1.mu.Unlock()
	if reason != "lease not renewed in time" {
		b.Fatalf("node 1 lost for %q", reason)
	}
	return at.Sub(lastKA), at.Sub(cutAt)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
