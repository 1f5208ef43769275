package httpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"munin/internal/api"
	"munin/internal/changestream"
	"munin/internal/limit"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/metrics"
)

// DefaultMaxInFlight is the default limit of requests served at once. Past
// the saturation point more concurrency only adds queueing (latency and
// memory) on two cores, so the excess is turned away at once instead.
const DefaultMaxInFlight = 64

// Bounds of a request that has not shown a valid key (yet). Admission sits
// after authentication: the server's slots (--max-inflight) go to requests
// whose key is known, so that no request without one can hold them. Before
// that, a request may read at most anonMaxBody bytes of its body (the
// sign-in form, a list of keys, is far smaller) and must send it within
// anonReadTimeout. A request that shows no credentials at all (no
// Authorization header, no cookie) also holds one of a separate, small
// set of anonymous slots: anonPerAddress at once and anonRate per second
// from one client address, anonInFlight from all of them. Bearer keys are
// checked from the headers, before the body is read, so a keyed request
// passes this stage in microseconds.
const (
	anonMaxBody     = 16 << 10
	anonReadTimeout = 5 * time.Second
	anonPerAddress  = 8
	anonRate        = 20 // per second and address, bursts of twice that
	anonInFlight    = 64
	// anonAddresses bounds the addresses with state: a flood from many
	// addresses is refused rather than growing memory.
	anonAddresses = 16 << 10
)

// ProjectShare is the fraction of the server's requests in flight that one
// project (all its keys together) may hold: a project near its share is
// refused while the server still has room for the others.
const ProjectShare = 2

// admitAnonymous is the first stage of admission control (see anonMaxBody):
// it bounds the body and read time of every request until it shows a key,
// and the number of requests without credentials per client address. The
// probes pass untouched.
func admitAnonymous(l *keyLimits, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		t := &ticket{l: l, m: m, rc: http.NewResponseController(w)}
		defer t.end()
		if !claimsKey(r) {
			addr := clientAddress(r)
			release, refused := limit.Acquire(l.anonAddr.Slot(addr), l.anonAll.Slot(struct{}{}))
			if refused != nil {
				m.Rejected()
				// Held back like a keyed refusal (see DefaultRefusalHold): a
				// client that reconnects at once would otherwise cost a core
				// in refusals alone. The connection is closed: net/http
				// would otherwise read the rest of an unread body before it
				// answers, at whatever pace the client sends it.
				l.holdBackAnonymous(r, addr)
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", strconv.Itoa(seconds(refused.RetryAfter)))
				msg := fmt.Sprintf("too many requests without a key from your address (at most %d at once, %d per second); retry after %d s",
					anonPerAddress, anonRate, seconds(refused.RetryAfter))
				if refused.Index == 1 {
					msg = fmt.Sprintf("server is at its limit of %d requests without a key; retry after 1 second", anonInFlight)
				}
				api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable, msg)
				return
			}
			t.anon = release
		}
		if r.Body != nil && r.Body != http.NoBody {
			// Only a request with a body: net/http clears the read deadline
			// itself once the body is read (for its background read); a
			// deadline set on a request without one would cut it off later.
			_ = t.rc.SetReadDeadline(time.Now().Add(anonReadTimeout))
			t.body = &anonBody{r: r.Body, left: anonMaxBody}
			r.Body = t.body
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)))
	})
}

// claimsKey: the request carries credentials, checked later (a bearer key
// from the header, a web session from its cookie). They cost nothing to
// forge, so they buy no slot; they only spare a keyed agent the anonymous
// slots, which agents sharing one address (loopback) would otherwise fill.
func claimsKey(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != ""
}

// clientAddress is the address anonymous requests are counted by: the
// client's IP, an IPv6 client's /64 (one host usually holds all of it).
// Behind a reverse proxy it is the proxy's, so all anonymous requests share
// one bound there.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip.Is6() && !ip.Is4In6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.Unmap().String()
}

// ticketKey carries a request's ticket.
type ticketKey struct{}

// ticket is a request's place in admission: an anonymous slot (if it came
// without credentials) until it shows a valid key, then its keyed units
// (key, project, server). Its methods run on the request's goroutine.
type ticket struct {
	l    *keyLimits
	m    *metrics.Metrics
	rc   *http.ResponseController
	body *anonBody // nil without a body

	mu       sync.Mutex
	anon     func() // nil once given back
	keyed    func() // nil unless admitted with a key
	inFlight bool
}

// admitted turns the request into a keyed one: it gives the anonymous slot
// back, lifts the anonymous body and time bounds, and holds release (its
// keyed units) until the request ends.
func (t *ticket) admitted(release func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.freeAnonLocked()
	t.keyed = release
	if t.body != nil && t.body.lift() {
		_ = t.rc.SetReadDeadline(time.Now().Add(readTimeout))
	}
	if !t.inFlight {
		t.inFlight = true
		t.m.InFlight(1)
	}
}

// free gives every slot back before the request ends (a refusal held back
// must not keep a slot another request could use).
func (t *ticket) free() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.freeAnonLocked()
	if t.keyed != nil {
		t.keyed()
		t.keyed = nil
	}
	if t.inFlight {
		t.inFlight = false
		t.m.InFlight(-1)
	}
}

func (t *ticket) freeAnonLocked() {
	if t.anon != nil {
		t.anon()
		t.anon = nil
	}
}

func (t *ticket) end() { t.free() }

// ticketOf is the request's ticket; nil outside admitAnonymous (tests that
// mount a handler alone).
func ticketOf(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	return t
}

// freeSlot gives the request's admission slots back before it ends (see
// ticket.free).
func freeSlot(ctx context.Context) {
	if t := ticketOf(ctx); t != nil {
		t.free()
	}
}

// anonBody caps what a request may read of its body before it shows a key;
// after lift it reads on unbounded (limitBody caps it for everyone).
type anonBody struct {
	r      io.ReadCloser
	mu     sync.Mutex
	left   int64
	lifted bool
	eof    bool
}

func (b *anonBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	capped := !b.lifted
	left := b.left
	b.mu.Unlock()
	if capped {
		if left <= 0 {
			return 0, &http.MaxBytesError{Limit: anonMaxBody}
		}
		p = p[:min(int64(len(p)), left)]
	}
	n, err := b.r.Read(p)
	b.mu.Lock()
	b.left -= int64(n)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	b.mu.Unlock()
	return n, err
}

func (b *anonBody) Close() error { return b.r.Close() }

// lift removes the cap; it reports whether the body is still being read
// (so its read deadline matters).
func (b *anonBody) lift() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lifted = true
	return !b.eof
}

// exempt: the probes and /metrics pass admission untouched.
func exempt(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// isStream: MCP's GET stream, MCP's subscriptions/listen stream (protocol
// 2026-07-28: a POST whose answer is a stream, told by its headers,
// mcpserver.IsListen) and the change streams (REST and web UI,
// changestream.IsPath) are long-lived and idle; they count against their
// key's rate, not against the requests in flight (their number has its own
// caps in mcpserver and changestream).
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/mcp" || changestream.IsPath(r.URL.Path)) ||
		isMCPListen(r)
}

// isMCPListen: a subscriptions/listen request on /mcp.
func isMCPListen(r *http.Request) bool { return r.URL.Path == "/mcp" && mcpserver.IsListen(r) }

// seconds is d in whole seconds, at least one (for Retry-After).
func seconds(d time.Duration) int { return max(1, int((d+time.Second-1)/time.Second)) }
