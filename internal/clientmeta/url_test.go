package clientmeta

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"code.dny.dev/ssrf"
)

// Each client_id URL rule refuses before any network access: the fetcher's
// transport fails the test if it is ever used.
func TestURLRules(t *testing.T) {
	f := New(Options{Logger: slog.New(slog.DiscardHandler)})
	f.http.Transport = noNetwork{t}
	cases := []struct{ url, rule string }{
		{"", "must be an https URL"},
		{"http://example.com/client.json", "must be an https URL"},
		{"HTTPS://example.com/client.json", "must be an https URL"},
		{"https:example.com/client.json", "must be an https URL"},
		{"https://user:pw@example.com/client.json", "must not contain userinfo"},
		{"https://user@example.com/client.json", "must not contain userinfo"},
		{"https://example.com/client.json#frag", "must not contain a fragment"},
		{"https://example.com/client.json#", "must not contain a fragment"},
		{"https://example.com/client.json?a=1", "must not contain a query"},
		{"https://example.com/client.json?", "must not contain a query"},
		{"https://example.com", "must have a path"},
		{"https://example.com/", "must have a path"},
		{"https://example.com/a/../client.json", "dot segments"},
		{"https://example.com/./client.json", "dot segments"},
		{"https://example.com/a/..", "dot segments"},
		{"https://example.com/a/%2e%2E/client.json", "dot segments"},
		{"https://example.com/a/%2E/client.json", "dot segments"},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), "at most 2048 bytes"},
		{"https://example.com/client json", "printable ASCII"},
		{"https://example.com/clïent.json", "printable ASCII"},
		{`https://example.com\@evil.example/client.json`, "printable ASCII"},
		{"https://10.0.0.1/client.json", "must be a global address"},
		{"https://192.168.1.1/client.json", "must be a global address"},
		{"https://169.254.169.254/latest/meta-data", "must be a global address"},
		{"https://127.0.0.1/client.json", "must be a global address"},
		{"https://100.64.0.1/client.json", "must be a global address"},
		{"https://[::1]/client.json", "must be a global address"},
		{"https://[fd00::1]/client.json", "must be a global address"},
		{"https://[::ffff:127.0.0.1]/client.json", "must be a global address"},
		{"https://[fe80::1%25eth0]/client.json", "invalid IPv6 address"},
		{"https://127.1/client.json", "must be a DNS name"},
		{"https://2130706433/client.json", "must be a DNS name"},
		{"https://0x7f000001/client.json", "must be a DNS name"},
		{"https://exa_mple.com/client.json", "must be a DNS name"},
		{"https://-example.com/client.json", "must be a DNS name"},
		{"https://example..com/client.json", "must be a DNS name"},
		{"https://example.com:0/client.json", "invalid port"},
		{"https://example.com:99999/client.json", "invalid port"},
		{"https://example.com:/client.json", "empty port"},
	}
	for _, c := range cases {
		_, err := f.Client(context.Background(), c.url)
		if err == nil || !strings.Contains(err.Error(), "client_id") {
			t.Errorf("%q: error %v, want a client_id rule", c.url, err)
			continue
		}
		wantInvalid(t, err, c.rule)
	}
}

// URLs that keep every rule pass them (the network then decides).
func TestURLRulesAccept(t *testing.T) {
	f := New(Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}})
	for _, u := range []string{
		"https://example.com/client.json",
		"https://app.example.com/oauth/client-metadata.json",
		"https://Example.COM./a/b/c",
		"https://example.com:8443/client.json",
		"https://93.184.216.34/client.json",
		"https://[2606:4700::1]/client",
		"https://10.1.2.3/client.json", // in AllowPrefixes
		"https://example.com/a%2Fb/...json",
		"https://example.com/" + strings.Repeat("a", MaxURLLength-len("https://example.com/")),
	} {
		if err := f.checkURL(u); err != nil {
			t.Errorf("%q: %v, want accepted", u, err)
		}
	}
}

// The dialer's guard judges the address actually dialled: loopback, private
// and link-local addresses are refused on any port, other ports than 443
// on public addresses, and an allowed prefix is reachable on any port.
func TestControl(t *testing.T) {
	def := New(Options{})
	allow := New(Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	cases := []struct {
		f        *Fetcher
		network  string
		address  string
		want     error
		describe string
	}{
		{def, "tcp4", "127.0.0.1:443", ssrf.ErrProhibitedIP, "loopback by default"},
		{def, "tcp4", "127.0.0.1:8443", ssrf.ErrProhibitedIP, "loopback names the address, not the port"},
		{def, "tcp4", "10.0.0.1:443", ssrf.ErrProhibitedIP, "private"},
		{def, "tcp4", "169.254.169.254:443", ssrf.ErrProhibitedIP, "cloud metadata"},
		{def, "tcp6", "[::1]:443", ssrf.ErrProhibitedIP, "v6 loopback"},
		{def, "tcp6", "[::ffff:10.0.0.1]:443", ssrf.ErrProhibitedIP, "v4-mapped private"},
		{def, "tcp4", "93.184.216.34:8443", ssrf.ErrProhibitedPort, "public, other port"},
		{def, "tcp4", "93.184.216.34:80", ssrf.ErrProhibitedPort, "public, port 80"},
		{def, "udp4", "93.184.216.34:443", ssrf.ErrProhibitedNetwork, "udp"},
		{def, "tcp4", "93.184.216.34:443", nil, "public on 443"},
		{def, "tcp6", "[2606:4700::1]:443", nil, "public v6 on 443"},
		{allow, "tcp4", "127.0.0.1:38123", nil, "allowed prefix, any port"},
		{allow, "tcp6", "[::ffff:127.0.0.1]:38123", nil, "allowed prefix, v4-mapped"},
		{allow, "tcp4", "127.0.0.2:443", ssrf.ErrProhibitedIP, "outside the allowed prefix"},
		{allow, "tcp4", "10.0.0.1:443", ssrf.ErrProhibitedIP, "private, with another prefix allowed"},
	}
	for _, c := range cases {
		err := c.f.control(c.network, c.address, nil)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s (%s %s): %v, want %v", c.describe, c.network, c.address, err, c.want)
		}
	}
}

// With default options the fetcher reaches no loopback server: not by its
// address (refused before dialing) and not by a name that resolves to it
// (refused by the dialer, after DNS). The server never sees a request.
func TestDefaultOptionsRefuseLoopback(t *testing.T) {
	s := newDocServer(t)
	port := netip.MustParseAddrPort(s.Listener.Addr().String()).Port()
	byName := "https://localhost:" + strconv.Itoa(int(port)) + "/client.json"
	byAddr := s.URL + "/client.json"
	s.serveDoc("/client.json", goodDoc(byName))

	f := New(Options{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		Logger: slog.New(slog.DiscardHandler)})
	_, err := f.Client(context.Background(), byAddr)
	wantInvalid(t, err, "must be a global address")
	_, err = f.Client(context.Background(), byName)
	wantInvalid(t, err, "not permitted")
	if !errors.Is(err, ssrf.ErrProhibitedIP) {
		t.Errorf("error %v, want it to wrap ssrf.ErrProhibitedIP (the dialer's guard)", err)
	}
	if n := s.total(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}
