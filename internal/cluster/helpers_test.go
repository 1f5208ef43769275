package cluster

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait bounds every wait in these tests; a correct run needs a small fraction of it.
const wait = 15 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func testConfig(t testing.TB, endpoints []string, advertise string, ttl time.Duration) Config {
	return Config{
		Endpoints: endpoints, Advertise: advertise, LeaseTTL: ttl,
		Schema: "v1", Secret: "s3cret", DialTimeout: 2 * time.Second, Logger: testLogger(t),
	}
}

// joinT joins a node and closes it at the end of the test.
func joinT(t testing.TB, cfg Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	n, err := Join(ctx, cfg)
	if err != nil {
		t.Fatalf("join %s: %v", cfg.Advertise, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// waitFor waits until cond holds, woken by the node's change notifications, at most `wait`.
func waitFor(t testing.TB, n *Node, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		ch := n.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond): // conditions on validity change without a view change
		case <-deadline:
			t.Fatalf("%s: not within %v", what, wait)
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// proxy is a TCP relay in front of an etcd member; Cut partitions everything behind it from etcd
// (existing connections dropped, new ones closed at once), Heal ends the partition. Pause holds every
// byte in flight (calls hang, as to a paused process), Resume delivers what was held.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	resume chan struct{} // non-nil while paused
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(t testing.TB, endpoint string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: strings.TrimPrefix(endpoint, "http://"), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			p.mu.Lock()
			gate := p.resume
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

func (p *proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}
