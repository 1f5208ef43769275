//go:build last

package lasttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// BenchmarkSSEBoden is the floor under -last.abonnenten: what one
// server-sent event costs on this machine with nothing of Munin or mcp-go
// in the way — a bare net/http server writes a pre-encoded event of the
// size of notifications/resources/updated to each of 1,000 open streams
// and flushes it (one write each, as every SSE server must do to deliver
// at once), and 1,000 clients in the same process read it. It reports the
// process's CPU per event (both ends, as the load test measures them) and
// what 1,000 subscribers at one round per 50 ms would cost of two cores.
//
//	go test -tags last -run '^$' -bench SSEBoden -benchtime 200x ./internal/lasttest
func BenchmarkSSEBoden(b *testing.B) {
	const streams = 1000
	event := []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"munin://acme/backend/decisions/storage-engine"}}` + "\n\n")
	var (
		mu    sync.Mutex
		chans []chan []byte
		open  sync.WaitGroup
	)
	open.Add(streams)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := make(chan []byte, 64)
		mu.Lock()
		chans = append(chans, ch)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		open.Done()
		for {
			select {
			case ev := <-ch:
				if _, err := w.Write(ev); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: streams}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	var got sync.WaitGroup
	var readers sync.WaitGroup
	for range streams {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) == 1 { // the blank line that ends an event
					got.Done()
				}
			}
		}()
	}
	open.Wait()
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	for range b.N {
		got.Add(streams)
		mu.Lock()
		for _, ch := range chans {
			ch <- event
		}
		mu.Unlock()
		got.Wait()
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.StopTimer()
	events := float64(b.N) * streams
	perEvent := float64(cpu.Nanoseconds()) / events
	b.ReportMetric(perEvent/1000, "cpu-µs/event")
	b.ReportMetric(events/wall.Seconds(), "events/s")
	b.ReportMetric(perEvent*streams*20/1e9/2*100, "%-of-2-cores-at-20/s")
	fmt.Printf("SSE-Boden: %d Ströme, %.0f Ereignisse, CPU %.2f µs je Ereignis (beide Enden), 1.000 Abonnenten × 20 Runden/s kosten %.0f %% von 2 Kernen\n",
		streams, events, perEvent/1000, perEvent*streams*20/1e9/2*100)
	cancel()
	srv.Close()
	readers.Wait()
}
