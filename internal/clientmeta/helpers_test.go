package clientmeta

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// fakeClock is the cache's clock in tests: it moves only when told to.
type fakeClock struct{ ns atomic.Int64 }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// docServer is a TLS server on 127.0.0.1 that serves documents by path and
// counts the requests each path gets.
type docServer struct {
	*httptest.Server
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	hits     map[string]int
}

func newDocServer(t *testing.T) *docServer {
	t.Helper()
	s := &docServer{handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		h := s.handlers[r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	// Refused dials end in TLS handshake errors the server would print.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// handle serves h at path.
func (s *docServer) handle(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
}

// serveDoc serves doc as JSON at path, with extra headers as given in
// "Name: value" form.
func (s *docServer) serveDoc(path string, doc any, headers ...string) {
	body, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	s.serveRaw(path, "application/json", string(body), headers...)
}

// serveRaw serves body with contentType at path.
func (s *docServer) serveRaw(path, contentType, body string, headers ...string) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			w.Header().Set(k, v)
		}
		io.WriteString(w, body)
	})
}

// count is how many requests path got.
func (s *docServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// total is how many requests the server got.
func (s *docServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.hits {
		n += c
	}
	return n
}

// fetcher is a Fetcher that may reach this server: 127.0.0.1 allowed, the
// server's certificate trusted, the clock fake. opts adjust the rest.
func (s *docServer) fetcher(clock *fakeClock, opts Options) *Fetcher {
	opts.AllowPrefixes = append(opts.AllowPrefixes, netip.MustParsePrefix("127.0.0.1/32"))
	opts.RootCAs = s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	if clock != nil {
		opts.Now = clock.Now
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return New(opts)
}

// goodDoc is a valid document for the client_id id.
func goodDoc(id string) map[string]any {
	return map[string]any{
		"client_id":     id,
		"client_name":   "Test Client",
		"redirect_uris": []string{"https://app.example.com/callback", "http://127.0.0.1/callback"},
	}
}

// wantInvalid fails t unless err is memory.CodeInvalid with a message
// containing rule.
func wantInvalid(t *testing.T, err error, rule string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", rule)
	}
	if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), rule) {
		t.Fatalf("error %q, want code invalid naming %q", err, rule)
	}
}

// mustClient looks url up and fails t on an error.
func mustClient(t *testing.T, f *Fetcher, url string) memory.OAuthClient {
	t.Helper()
	c, err := f.Client(context.Background(), url)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return c
}

// noNetwork is a transport that fails the test if anything is sent.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("request sent to %s; the URL rules should have refused it", r.URL)
	return nil, io.EOF
}
