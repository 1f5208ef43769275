package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"munin/internal/cpuuse"
)

// Sync-mode cost for one workspace: each iteration commits 32 rows of 600 B
// (one group-commit batch) and waits for the replica (file replica on the
// same disk). Reports the sync wait's p50/p99 besides ns/op.
//
//	go test -run '^$' -bench SyncWait -count 5 ./internal/replica/
func BenchmarkSyncWait(b *testing.B) {
	sc := startSidecar(b, Options{Logger: discardLogger()})
	w := openWriter(b, filepath.Join(b.TempDir(), "ws.db"))
	ctx := ctxT(b)
	if err := sc.StartEpoch(ctx, w.path, EpochURL(fileURL(b), "ws", 1)); err != nil {
		b.Fatal(err)
	}
	waits := make([]time.Duration, 0, 1024)
	cpu0, cpuErr := cpuuse.Of(sc.PID())
	for b.Loop() {
		w.batch(b, 32, 600)
		start := time.Now()
		if _, err := sc.Sync(ctx, w.path); err != nil {
			b.Fatal(err)
		}
		waits = append(waits, time.Since(start))
	}
	// Litestream's own CPU per sync, the cost that sync mode pays per
	// group-commit batch (no /proc: not reported).
	if cpu1, err := cpuuse.Of(sc.PID()); cpuErr == nil && err == nil && len(waits) > 0 {
		b.ReportMetric(float64(cpu1.CPU-cpu0.CPU)/float64(time.Millisecond)/float64(len(waits)), "litestream-cpu-ms/op")
	}
	reportPercentiles(b, waits)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		return float64(d[min(int(q*float64(len(d))), len(d)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// Restore time of a ~5 MB workspace written the way sync mode writes it: one
// Litestream transaction (one L0 file) per 32-row batch, not yet compacted —
// the most files a takeover can meet. Includes the full integrity check.
//
//	go test -run '^$' -bench Restore5MB -count 5 ./internal/replica/
func BenchmarkRestore5MB(b *testing.B) {
	bin := requireBinary(b)
	sc := startSidecar(b, Options{Binary: bin, Logger: discardLogger()})
	w := openWriter(b, filepath.Join(b.TempDir(), "ws.db"))
	url := EpochURL(fileURL(b), "ws", 1)
	ctx := ctxT(b)
	if err := sc.StartEpoch(ctx, w.path, url); err != nil {
		b.Fatal(err)
	}
	batches := 0
	for ; batches*32*600 < 5<<20; batches++ { // ~5 MB of row data
		w.batch(b, 32, 600)
		if _, err := sc.Sync(ctx, w.path); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	var size int64
	n := 0
	for b.Loop() {
		out := filepath.Join(dir, fmt.Sprintf("r%d.db", n))
		n++
		if _, err := Restore(ctx, bin, url, out, RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
		size = fileSize(b, out)
	}
	b.ReportMetric(float64(size)/(1<<20), "MB")
	b.ReportMetric(float64(batches), "l0-files")
}

func fileSize(b testing.TB, p string) int64 {
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// Several workspaces replicate through one sidecar at once while a lag
// poller reads their positions; every restore holds every synced row.
func TestConcurrentWorkspaces(t *testing.T) {
	bin := requireBinary(t)
	sc := startSidecar(t, Options{Binary: bin})
	base := fileURL(t)
	ctx := ctxT(t)
	const workspaces, batches = 4, 8
	writers := make([]*writer, workspaces)
	for i := range writers {
		writers[i] = openWriter(t, filepath.Join(t.TempDir(), fmt.Sprintf("ws%d.db", i)))
		if err := sc.StartEpoch(ctx, writers[i].path, EpochURL(base, fmt.Sprintf("ws%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, workspaces+1)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, w := range writers {
				if _, err := sc.Lag(ctx, w.path); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	var syncers sync.WaitGroup
	for _, w := range writers {
		syncers.Go(func() {
			for i := 0; i < batches; i++ {
				if err := w.tryBatch(32, 100); err != nil {
					errs <- err
					return
				}
				if _, err := sc.Sync(ctx, w.path); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	syncers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range writers {
		out := filepath.Join(t.TempDir(), "out.db")
		if _, err := Restore(ctx, bin, EpochURL(base, fmt.Sprintf("ws%d", i), 1), out, RestoreOptions{}); err != nil {
			t.Fatal(err)
		}
		checkRows(t, out, batches*32, 100)
	}
}
