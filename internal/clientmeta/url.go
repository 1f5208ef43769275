package clientmeta

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"munin/internal/memory"
)

// MaxURLLength is the longest client_id URL accepted, in bytes.
const MaxURLLength = 2048

// checkURL applies the client_id URL rules, before any network access. A
// client_id breaking one is refused with memory.CodeInvalid naming the rule.
func (f *Fetcher) checkURL(raw string) error {
	bad := func(rule string) error { return memory.Errorf(memory.CodeInvalid, "client_id %s", rule) }
	if len(raw) > MaxURLLength {
		return bad("must be at most " + strconv.Itoa(MaxURLLength) + " bytes long")
	}
	// Printable ASCII only: anything else must be percent-encoded, so that
	// the client_id has one spelling to compare byte for byte.
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] >= 0x7f || raw[i] == '\\' {
			return bad("must be printable ASCII without spaces or backslashes")
		}
	}
	if !strings.HasPrefix(raw, "https://") {
		return bad("must be an https URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("is not a valid URL")
	}
	switch {
	case u.User != nil:
		return bad("must not contain userinfo")
	case strings.Contains(raw, "#"):
		return bad("must not contain a fragment")
	case strings.Contains(raw, "?"):
		return bad("must not contain a query")
	case u.Path == "" || u.Path == "/":
		return bad("must have a path")
	}
	if err := f.checkHost(u); err != nil {
		return bad(err.Error())
	}
	// Dot segments, also percent-encoded: a server may resolve them, so the
	// document would sit at another URL than the client_id names.
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if dec, err := url.PathUnescape(seg); err != nil || dec == "." || dec == ".." {
			return bad("must not contain dot segments (. or ..) in its path")
		}
	}
	return nil
}

// ruleError is a rule broken, in words; the caller prefixes what broke it.
type ruleError string

func (r ruleError) Error() string { return string(r) }

// checkHost wants a DNS name or a global IP address, and a port that is
// absent (443) or a number. Which ports may be dialled is the dialer's
// decision (see control): it knows the address a name resolves to.
func (f *Fetcher) checkHost(u *url.URL) error {
	host := u.Hostname()
	if strings.HasSuffix(u.Host, ":") {
		return ruleError("must not end its host with an empty port")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return ruleError("has an invalid port")
		}
	}
	if strings.HasPrefix(u.Host, "[") || strings.Count(host, ":") > 0 {
		addr, err := netip.ParseAddr(host)
		if err != nil || addr.Zone() != "" || !addr.Is6() {
			return ruleError("has an invalid IPv6 address")
		}
		return f.checkAddr(addr)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return f.checkAddr(addr)
	}
	if !dnsName(host) {
		return ruleError("host must be a DNS name or an IP address")
	}
	return nil
}

// checkAddr refuses an address literal the dialer would refuse anyway, so
// that 10.0.0.1 or 169.254.169.254 never cost a connection attempt.
func (f *Fetcher) checkAddr(addr netip.Addr) error {
	if f.allowed(addr) {
		return nil
	}
	if err := strict.SafeAddr(addr); err != nil {
		return ruleError("host must be a global address, not " + addr.String())
	}
	return nil
}

// dnsName reports whether host is letters, digits and hyphens in dot-
// separated labels of 1–63 bytes, at most 253 bytes, with a last label that
// is not a number: URL parsers read "127.1" or "0x7f.1" as IPv4 addresses.
func dnsName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i] | 0x20 // lower case, for letters
			if !('a' <= c && c <= 'z' || '0' <= l[i] && l[i] <= '9' || l[i] == '-') {
				return false
			}
		}
	}
	last := strings.ToLower(labels[len(labels)-1])
	if strings.HasPrefix(last, "0x") {
		return false
	}
	return strings.Trim(last, "0123456789") != ""
}
