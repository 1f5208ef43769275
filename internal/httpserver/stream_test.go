package httpserver

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sse is a fake MCP handler: GET streams one event every tick until n are
// sent or the request context ends, and reports how it ended.
func sse(n int, tick time.Duration, ended chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := 0; n == 0 || i < n; i++ {
			select {
			case <-r.Context().Done():
				ended <- "cancelled"
				return
			case <-time.After(tick):
			}
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				ended <- "write failed: " + err.Error()
				return
			}
			w.(http.Flusher).Flush()
		}
		ended <- "complete"
	})
}

// TestStreamOutlivesTimeouts: an SSE stream on GET /mcp, and a
// subscriptions/listen stream (a POST), runs longer than the server's read
// and write timeouts, which still bound ordinary requests.
func TestStreamOutlivesTimeouts(t *testing.T) {
	for _, kind := range streamKinds {
		t.Run(kind, func(t *testing.T) {
			ended := make(chan string, 1)
			s := newStack(t, Config{}, sse(8, 100*time.Millisecond, ended), nil)
			s.srv.ReadTimeout = 300 * time.Millisecond
			s.srv.WriteTimeout = 300 * time.Millisecond
			s.serve(t)
			resp := s.openStream(t, kind)
			events := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					events++
				}
			}
			if events != 8 {
				t.Fatalf("got %d of 8 events (%v)", events, sc.Err())
			}
			if how := <-ended; how != "complete" {
				t.Fatalf("stream ended: %s", how)
			}
		})
	}
}

// TestShutdownEndsStreams: Shutdown does not wait for SSE clients (GET
// streams and listen streams) that never hang up; it cancels their streams
// and returns.
func TestShutdownEndsStreams(t *testing.T) {
	for _, kind := range streamKinds {
		t.Run(kind, func(t *testing.T) {
			ended := make(chan string, 1)
			s := newStack(t, Config{}, sse(0, 50*time.Millisecond, ended), nil)
			s.serve(t)
			resp := s.openStream(t, kind)
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			shutdownEnds(t, s, ended)
		})
	}
}

// shutdownEnds shuts s down (bounded: 5 s) and checks that the stream
// reporting to ended was cancelled rather than waited for.
func shutdownEnds(t *testing.T, s *stack, ended <-chan string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if how := <-ended; how != "cancelled" {
		t.Fatalf("stream ended: %s", how)
	}
}
