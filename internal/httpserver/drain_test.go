package httpserver

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDrainRefusesNewConnectionsAndFinishesOpenRequests: what
// docs/operations.md#health-and-readiness promises for SIGTERM. Once the
// drain begins, a new connection is refused
// (a load balancer's probe counts that as not ready), while a request
// already in flight still gets its answer, and only then does the drain end.
func TestDrainRefusesNewConnectionsAndFinishesOpenRequests(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	s := newStack(t, Config{}, blocking, nil)
	s.serve(t)
	addr := strings.TrimPrefix(s.base, "http://")

	status := make(chan int, 1)
	go func() { status <- s.post(t, "/mcp", `{}`) }()
	<-entered

	drained := make(chan error, 1)
	go func() { drained <- s.srv.Shutdown(t.Context()) }()
	refused := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			refused = true
			break
		}
		c.Close()
	}
	if !refused {
		t.Fatal("new connections still accepted 5 s after the drain began")
	}
	select {
	case err := <-drained:
		t.Fatalf("the drain ended (%v) while a request was still in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(release)
	if got := <-status; got != http.StatusOK {
		t.Fatalf("the request in flight when the drain began got %d, want 200", got)
	}
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
}
