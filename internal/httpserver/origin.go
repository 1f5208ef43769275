package httpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"munin/internal/api"
	"munin/internal/memory"
)

// originPolicy decides which browser origins may talk to the server. This is
// the DNS-rebinding defence the MCP specification asks of Streamable HTTP
// servers: a web page the user happens to visit must not reach a Munin on
// localhost through the user's browser.
type originPolicy struct {
	allowed map[string]bool // normalized "scheme://host[:port]"
	hosts   map[string]bool // host[:port] of the allowed origins, for the Host check
}

func newOriginPolicy(origins []string) *originPolicy {
	p := &originPolicy{allowed: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range origins {
		if n, host, ok := normalizeOrigin(o); ok {
			p.allowed[n] = true
			p.hosts[host] = true
		}
	}
	return p
}

// NormalizeOrigins checks and normalizes configured origins (see
// normalizeOrigin), skipping empty items of a comma list, so that every layer
// compares the same strings. A value that is no origin is an error naming it.
func NormalizeOrigins(origins []string) ([]string, error) {
	out := make([]string, 0, len(origins))
	for _, o := range origins {
		if strings.TrimSpace(o) == "" {
			continue
		}
		n, _, ok := normalizeOrigin(o)
		if !ok {
			return nil, fmt.Errorf("allowed origin %q is not an origin: want scheme://host[:port] with http or https, no path", o)
		}
		out = append(out, n)
	}
	return out, nil
}

// normalizeOrigin lower-cases "scheme://host[:port]" and drops a trailing
// slash; anything with a path, user info or another scheme is not an origin.
func normalizeOrigin(s string) (origin, host string, ok bool) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "", false
	}
	host = strings.ToLower(u.Host)
	return scheme + "://" + host, host, true
}

// checkHost refuses a Host header that names neither loopback nor an allowed
// origin when the server listens on loopback. A rebinding attack makes the
// browser send the attacker's domain as Host (and as Origin, which then
// looks same-host), so for a loopback server the Host is what gives it away.
func (p *originPolicy) checkHost(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopback(local.String()) {
		return ""
	}
	host := strings.ToLower(r.Host)
	if isLoopback(host) || p.hosts[host] {
		return ""
	}
	return "Host " + quote(r.Host) + " is not this server; a server on loopback only answers to localhost, 127.0.0.1, [::1] or an allowed origin"
}

// checkOrigin allows an absent Origin (CLI agents send none), the server's
// own host, any loopback origin and the configured ones.
func (p *originPolicy) checkOrigin(r *http.Request) string {
	raw := r.Header.Get("Origin")
	if raw == "" {
		return ""
	}
	origin, host, ok := normalizeOrigin(raw)
	switch {
	case !ok:
		// Includes "null", which sandboxed frames and file:// pages send.
	case p.allowed[origin], isLoopback(host), host == strings.ToLower(r.Host):
		return ""
	}
	return "Origin " + quote(raw) + " is not allowed; add it to the allowed origins to use Munin from that page"
}

// checkOrigin is the middleware form of the policy: 403 with a JSON error.
func checkOrigin(p *originPolicy, oauthOn bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if oauthOn && oauthPublic(r.URL.Path) {
			next.ServeHTTP(w, r) // no ambient authority to abuse (oauth.go)
			return
		}
		msg := p.checkHost(r)
		if msg == "" {
			msg = p.checkOrigin(r)
		}
		if msg != "" {
			api.WriteError(w, memory.Errorf(memory.CodeForbidden, "%s", msg))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopback reports whether host[:port] names this machine: localhost (and
// *.localhost, which browsers resolve to loopback) or a loopback IP.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quote bounds and quotes a client-supplied value for an error message.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
