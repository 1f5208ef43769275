package clientmeta

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"munin/internal/memory"
)

// strict is the guard for every address not in Options.AllowPrefixes: global
// unicast only (the IANA special-purpose registries denied: loopback, RFC
// 1918, link-local with the cloud metadata address, CGNAT, …), tcp only,
// port 443 only.
var strict = ssrf.New(ssrf.WithPorts(443))

// maxHeader caps the response header bytes.
const maxHeader = 8 << 10

// allowed reports whether addr is in Options.AllowPrefixes. An IPv4 address
// written as IPv6 (::ffff:127.0.0.1) counts as the IPv4 address.
func (f *Fetcher) allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range f.allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// control is the dialer's Control: it runs on the address about to be
// connected, after DNS, so a name that resolves (or rebinds) to an inner
// address is refused as the literal would be. Allowed prefixes may be
// dialled on any port, because ssrf.WithPorts is one list for every address
// and a test server listens on a random port; everything else only on 443.
// The address is judged before the port, so that a refusal names the real
// reason (an inner address) rather than its port.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: %s", ssrf.ErrProhibitedNetwork, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ssrf.ErrInvalidHostPort, address)
	}
	if f.allowed(ap.Addr()) {
		return nil
	}
	if err := strict.SafeAddr(ap.Addr()); err != nil {
		return err
	}
	return strict.SafeAddrPort(ap)
}

// newHTTPClient builds the one client of the fetcher: the guarded dialer, no
// proxy (the dialer would judge the proxy's address, not the target's),
// no redirects, no keep-alive (fetches are rare and cached), no transparent
// gzip (the size cap counts the bytes on the wire).
func (f *Fetcher) newHTTPClient(roots *x509.CertPool) *http.Client {
	phase := min(f.timeout, PhaseTimeout)
	dialer := &net.Dialer{Timeout: phase, Control: f.control}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    phase,
		ResponseHeaderTimeout:  phase,
		MaxResponseHeaderBytes: maxHeader,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   f.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // the 3xx comes back and is refused
		},
	}
}

// fetch GETs the document at clientID and returns its body and how long to
// cache it. Every failure is memory.CodeInvalid naming the rule; the cause
// (addresses, TLS details) stays in Err for the log.
func (f *Fetcher) fetch(ctx context.Context, clientID string) ([]byte, time.Duration, error) {
	refuse := func(cause error, format string, args ...any) error {
		return &memory.Error{Code: memory.CodeInvalid, Err: cause,
			Message: "client metadata document " + fmt.Sprintf(format, args...)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, 0, refuse(err, "could not be requested")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, 0, fetchError(err, refuse, f.timeout)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, 0, refuse(nil, "must not redirect (HTTP %d)", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, 0, refuse(nil, "answered HTTP %d, want 200", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, 0, refuse(err, "must have Content-Type application/json")
	}
	tooLarge := refuse(nil, "is larger than %d bytes", f.maxBytes)
	if resp.ContentLength > f.maxBytes {
		return nil, 0, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, 0, fetchError(err, refuse, f.timeout)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, 0, tooLarge
	}
	return body, cacheTTL(resp.Header.Values("Cache-Control")), nil
}

// fetchError names why a request failed: the address guard, the time limit,
// or another network or TLS failure.
func fetchError(err error, refuse func(error, string, ...any) error, timeout time.Duration) error {
	var ne net.Error
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedPort),
		errors.Is(err, ssrf.ErrProhibitedNetwork), errors.Is(err, ssrf.ErrInvalidHostPort):
		return refuse(err, "could not be fetched: its host resolves to an address or port that is not permitted (only public addresses, port 443)")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return refuse(err, "could not be fetched within %s", timeout)
	default:
		return refuse(err, "could not be fetched (network or TLS failure)")
	}
}

// cacheTTL reads max-age from Cache-Control and clamps it to [MinTTL,
// MaxTTL]; without one it is DefaultTTL. no-store and no-cache count as
// max-age=0, i.e. MinTTL: the floor is what keeps a flood of /authorize
// requests from turning into a flood of fetches.
func cacheTTL(values []string) time.Duration {
	ttl, seen := DefaultTTL, false
	for _, v := range values {
		for _, d := range strings.Split(v, ",") {
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return MinTTL
			case "max-age":
				if seen {
					continue // the first max-age counts (RFC 9111 §4.2.1)
				}
				seen = true
				secs, err := strconv.ParseUint(strings.Trim(arg, `"`), 10, 64)
				switch {
				case errors.Is(err, strconv.ErrRange):
					secs = math.MaxUint64 // too many digits still means long (RFC 9111 §1.2.2)
				case err != nil:
					secs = 0 // invalid means stale (RFC 9111 §4.2.1)
				}
				ttl = time.Duration(min(secs, uint64(MaxTTL/time.Second))) * time.Second
			}
		}
	}
	return max(ttl, MinTTL)
}
