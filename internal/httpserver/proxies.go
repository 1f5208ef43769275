package httpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads --trusted-proxies: addresses ("127.0.0.1",
// "::1") and prefixes ("10.0.0.0/8"). A value that is neither is an error
// naming it.
func ParseTrustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither an IP address nor a prefix such as 10.0.0.0/8", v)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// trustProxies makes the client's address the one a trusted reverse proxy
// reports. Behind a proxy every request comes from the proxy's address, so
// the anonymous requests of all clients would share one bound and the
// request log would name the proxy. A request whose peer is a trusted proxy
// gets as RemoteAddr the rightmost address of X-Forwarded-For that is not
// itself a trusted proxy: entries left of it were written by the client and
// prove nothing. From any other peer the header is ignored, so a client
// cannot choose its own address. With no trusted proxies this is a no-op.
func trustProxies(trusted []netip.Prefix, next http.Handler) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if client, ok := forwardedClient(trusted, r); ok {
			r2 := *r
			r2.RemoteAddr = net.JoinHostPort(client.String(), "0")
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

// forwardedClient is the client behind trusted proxies, if r came through
// one and the chain names a client.
func forwardedClient(trusted []netip.Prefix, r *http.Request) (netip.Addr, bool) {
	peer, ok := addrOf(r.RemoteAddr)
	if !ok || !isTrusted(trusted, peer) {
		return netip.Addr{}, false
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false // garbage where a proxy wrote: keep the peer
		}
		if a = a.Unmap(); !isTrusted(trusted, a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func addrOf(remote string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isTrusted(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
