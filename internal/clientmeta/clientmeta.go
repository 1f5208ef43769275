// Package clientmeta fetches and checks OAuth Client ID Metadata Documents
// (CIMD, draft-ietf-oauth-client-id-metadata-document; MCP authorization
// 2025-11-25 and later): a client's client_id is an https URL, and the
// authorization server fetches the JSON document at that URL to learn the
// client's name and redirect URIs.
//
// It is a package of its own because it is the one place where Munin sends
// requests to URLs that strangers choose: anyone can put any client_id into
// /authorize. That network I/O is kept out of memory (pure), store
// (SQLite) and service (authorization), and fenced here:
//   - the URL is checked before any network access (https, a name or a
//     global address, a path, no userinfo, query, fragment or dot segments);
//   - the dialer refuses every address that is not global unicast (loopback,
//     private, link-local, cloud metadata, …) and every port but 443, on the
//     address actually dialled after DNS, so a name that resolves (or
//     rebinds) to an inner address is refused too (code.dny.dev/ssrf);
//   - no proxy, no redirects, a time limit, a size limit and a limit on
//     fetches at once;
//   - the document is checked strictly (client_id equals the URL, a name,
//     redirect URIs of safe forms, no shared secret);
//   - results are cached, failures too, and concurrent requests for one URL
//     share one fetch, so a flood of /authorize requests naming a bad
//     client_id costs one fetch a minute.
package clientmeta

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"munin/internal/memory"
)

// Defaults and bounds of a Fetcher.
const (
	DefaultTimeout       = 5 * time.Second // one whole fetch: dial, TLS, headers, body
	PhaseTimeout         = 3 * time.Second // each of dial, TLS handshake, response headers
	DefaultMaxBytes      = 64 << 10        // the largest document accepted
	DefaultMaxConcurrent = 8               // fetches at once, across all URLs
	DefaultMaxEntries    = 1000            // cached URLs, successes and failures together

	MinTTL      = 5 * time.Minute // a document is kept at least this long, whatever max-age says
	MaxTTL      = 24 * time.Hour  // and at most this long
	DefaultTTL  = time.Hour       // without a max-age
	NegativeTTL = time.Minute     // a failure is remembered this long
)

// Options configure a Fetcher. The zero value is the production setting.
type Options struct {
	// AllowPrefixes are addresses the fetcher may reach although they are
	// not global (e.g. 127.0.0.1/32 for a test server), on any port. Default
	// none: only global unicast addresses, on port 443.
	AllowPrefixes []netip.Prefix
	// RootCAs verifies the servers' certificates; nil means the system's.
	RootCAs *x509.CertPool
	// Timeout bounds one fetch (default DefaultTimeout); dial, TLS handshake
	// and response headers each get the smaller of it and PhaseTimeout. It
	// also bounds the wait for a free slot under MaxConcurrent.
	Timeout time.Duration
	// MaxBytes caps a document's size (default DefaultMaxBytes).
	MaxBytes int64
	// MaxConcurrent caps fetches at once (default DefaultMaxConcurrent).
	MaxConcurrent int
	// MaxEntries caps the cache (default DefaultMaxEntries).
	MaxEntries int
	// Now is the clock of the cache (default time.Now); tests pass a fake.
	Now func() time.Time
	// Logger gets one line per fetch that fails: the URL and the rule it
	// broke (default slog.Default()).
	Logger *slog.Logger
}

// Fetcher turns a CIMD client_id into a client: from its cache, or by
// fetching and checking the document. It is safe for concurrent use.
type Fetcher struct {
	allow      []netip.Prefix
	http       *http.Client
	timeout    time.Duration
	maxBytes   int64
	maxEntries int
	now        func() time.Time
	log        *slog.Logger
	slots      chan struct{} // a semaphore: one token per fetch under way

	mu       sync.Mutex
	entries  map[string]entry
	inflight map[string]*call

	// joined, if set, is called when a request joins a fetch under way
	// (tests count it to prove that concurrent requests share one fetch).
	joined func()
}

// entry is a cached outcome: a client or the error that refused it.
type entry struct {
	client  memory.OAuthClient
	err     error
	stored  time.Time
	expires time.Time
}

// call is a fetch under way; done is closed when client/err are set.
type call struct {
	done   chan struct{}
	client memory.OAuthClient
	err    error
}

// New builds a Fetcher.
func New(opts Options) *Fetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Fetcher{
		allow:      slices.Clone(opts.AllowPrefixes),
		timeout:    opts.Timeout,
		maxBytes:   opts.MaxBytes,
		maxEntries: opts.MaxEntries,
		now:        opts.Now,
		log:        opts.Logger,
		slots:      make(chan struct{}, opts.MaxConcurrent),
		entries:    make(map[string]entry),
		inflight:   make(map[string]*call),
	}
	f.http = f.newHTTPClient(opts.RootCAs)
	return f
}

// Client returns the client whose client_id is clientID: Kind
// memory.OAuthClientCIMD, ID the URL exactly, Name the document's
// client_name, RedirectURIs its redirect_uris. A URL that breaks a rule is
// refused before any network access; a document that cannot be fetched or
// breaks a rule is refused with memory.CodeInvalid, and that refusal is
// remembered for NegativeTTL. When MaxConcurrent fetches are under way
// for a whole Timeout, the answer is memory.CodeUnavailable (not
// remembered); when ctx ends first, ctx.Err() (the fetch goes on for others
// and is cached). Errors name the rule, never the document.
func (f *Fetcher) Client(ctx context.Context, clientID string) (memory.OAuthClient, error) {
	if err := f.checkURL(clientID); err != nil {
		return memory.OAuthClient{}, err
	}
	f.mu.Lock()
	if e, ok := f.entries[clientID]; ok && f.now().Before(e.expires) {
		f.mu.Unlock()
		return cloneClient(e.client), e.err
	}
	c, joined := f.inflight[clientID]
	if !joined {
		c = &call{done: make(chan struct{})}
		f.inflight[clientID] = c
		// The fetch runs apart from this request: others may join it, and
		// this caller giving up must not fail it for them.
		go f.run(context.WithoutCancel(ctx), clientID, c)
	}
	hook := f.joined
	f.mu.Unlock()
	if joined && hook != nil {
		hook()
	}
	select {
	case <-c.done:
		return cloneClient(c.client), c.err
	case <-ctx.Done():
		return memory.OAuthClient{}, ctx.Err()
	}
}

// run fetches clientID for c and caches the outcome.
func (f *Fetcher) run(ctx context.Context, clientID string, c *call) {
	client, ttl, err := f.fetchLimited(ctx, clientID)
	if err != nil {
		ttl = NegativeTTL
		f.log.Warn("client metadata document refused", "client_id", clientID, "rule", memory.PublicMessage(err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.client, c.err = client, err
	delete(f.inflight, clientID)
	// Being busy says nothing about this URL: it is not remembered.
	if !errors.Is(err, errBusy) {
		f.store(clientID, client, err, ttl)
	}
	close(c.done)
}

// fetchLimited waits for a slot under MaxConcurrent (at most Timeout), then
// fetches and checks the document; ttl is how long to keep the client.
func (f *Fetcher) fetchLimited(ctx context.Context, clientID string) (client memory.OAuthClient, ttl time.Duration, err error) {
	wait := time.NewTimer(f.timeout)
	defer wait.Stop()
	select {
	case f.slots <- struct{}{}:
	case <-wait.C:
		return client, 0, &memory.Error{Code: memory.CodeUnavailable, Err: errBusy, Message: fmt.Sprintf(
			"too many client metadata documents are being fetched at once (limit %d); try again", cap(f.slots))}
	}
	defer func() { <-f.slots }()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	doc, ttl, err := f.fetch(ctx, clientID)
	if err != nil {
		return client, 0, err
	}
	if client, err = parseDocument(clientID, doc); err != nil {
		return client, 0, err
	}
	client.CreatedAt = f.now()
	return client, ttl, nil
}

// errBusy marks the refusal for lack of a slot.
var errBusy = errors.New("clientmeta: concurrency limit")

// store caches an outcome, making room first if the cache is full: expired
// entries go, then the oldest.
func (f *Fetcher) store(clientID string, client memory.OAuthClient, err error, ttl time.Duration) {
	now := f.now()
	if _, ok := f.entries[clientID]; !ok && len(f.entries) >= f.maxEntries {
		oldest, first := "", true
		var oldestAt time.Time
		for id, e := range f.entries {
			if !now.Before(e.expires) {
				delete(f.entries, id)
				continue
			}
			if first || e.stored.Before(oldestAt) {
				oldest, oldestAt, first = id, e.stored, false
			}
		}
		if len(f.entries) >= f.maxEntries {
			delete(f.entries, oldest)
		}
	}
	f.entries[clientID] = entry{client: client, err: err, stored: now, expires: now.Add(ttl)}
}

// cloneClient copies the slice a caller could otherwise change in the cache.
func cloneClient(c memory.OAuthClient) memory.OAuthClient {
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	return c
}
