package httpserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies([]string{"127.0.0.1", " ::1 ", "10.1.2.3/8", ""})
	if err != nil || len(got) != 3 || got[0].String() != "127.0.0.1/32" || got[1].String() != "::1/128" || got[2].String() != "10.0.0.0/8" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"localhost", "10.0.0.0/33", "1.2.3"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestTrustProxies: the client address is taken from X-Forwarded-For only
// when the peer is a trusted proxy, and then the rightmost entry that is
// not a trusted proxy — a client cannot choose its address by writing the
// header itself.
func TestTrustProxies(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"127.0.0.1", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	h := trustProxies(trusted, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = clientAddress(r) }))
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"behind the proxy", "127.0.0.1:5000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"two proxies", "127.0.0.1:5000", []string{"203.0.113.7, 10.0.0.2"}, "203.0.113.7"},
		{"spoofed entry left of the client", "127.0.0.1:5000", []string{"6.6.6.6, 203.0.113.7"}, "203.0.113.7"},
		{"header per hop", "127.0.0.1:5000", []string{"6.6.6.6", "203.0.113.7"}, "203.0.113.7"},
		{"IPv6 client, its /64", "127.0.0.1:5000", []string{"2001:db8::1"}, "2001:db8::/64"},
		{"untrusted peer sets the header", "198.51.100.9:5000", []string{"203.0.113.7"}, "198.51.100.9"},
		{"no header", "127.0.0.1:5000", nil, "127.0.0.1"},
		{"garbage from the proxy", "127.0.0.1:5000", []string{"203.0.113.7, nonsense"}, "127.0.0.1"},
		{"only proxies", "127.0.0.1:5000", []string{"10.0.0.3"}, "127.0.0.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if seen != tc.want {
			t.Errorf("%s: client %s, want %s", tc.name, seen, tc.want)
		}
	}

	// Without trusted proxies the header is never read.
	var plain string
	h = trustProxies(nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plain = clientAddress(r) }))
	r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "203.0.113.7")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if plain != "127.0.0.1" {
		t.Errorf("no trusted proxies: client %s, want the peer", plain)
	}
}

// TestTrustedProxiesWired: through the whole front door, a request from a
// trusted proxy is logged with the client X-Forwarded-For names; without
// the setting, with the proxy's address.
func TestTrustedProxiesWired(t *testing.T) {
	for _, tc := range []struct {
		trusted []string
		want    string
	}{
		{[]string{"127.0.0.1"}, "remote=203.0.113.7:0"},
		{nil, "remote=127.0.0.1:"},
	} {
		proxies, err := ParseTrustedProxies(tc.trusted)
		if err != nil {
			t.Fatal(err)
		}
		s := newStack(t, Config{TrustedProxies: proxies}, nil, nil)
		s.serve(t)
		req, _ := http.NewRequest(http.MethodGet, s.base+"/healthz", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(logLines(s.log.String(), "path=/healthz", tc.want)) != 1 {
			t.Errorf("trusted %v: want a request log line with %s:\n%s", tc.trusted, tc.want, s.log.String())
		}
	}
}
