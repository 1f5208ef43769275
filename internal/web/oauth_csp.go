package web

import (
	"net/http"
	"net/url"
	"strings"
)

// What the authorize page needs to know of a redirect URI the service has
// checked (registered by the client, matched by service.CheckOAuthRequest):
// where the browser goes afterwards, in words for the person and as a CSP
// source. The URI is never taken apart for anything else: the redirect
// itself goes to it byte for byte, with the answer's parameters appended.

// redirectTarget describes a checked redirect URI.
type redirectTarget struct {
	// Host is what the consent page names beside the client's name: the
	// host of an https URI (any client can claim any name, the host is what
	// the browser really goes to — MCP 2025-11-25 requires showing it), or
	// "an app on this computer" for a loopback http URI or an app's own
	// scheme.
	Host string
	// Local: the redirect stays on this computer (loopback or an app's
	// scheme); the page then says so, since any local program can listen.
	Local bool
	// FormAction is the CSP source that lets the browser follow the
	// redirect after the consent form is posted: the exact origin of an
	// http(s) URI (with its port), or "scheme:" for an app's own scheme.
	// Empty when the URI does not parse into a safe source; the redirect is
	// then blocked by the browser, never widened.
	FormAction string
}

// targetOf describes redirect URI uri.
func targetOf(uri string) redirectTarget {
	scheme, _, ok := strings.Cut(uri, ":")
	if !ok || !cspScheme(scheme) {
		return redirectTarget{Host: "an unknown address", Local: true}
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" {
		return redirectTarget{Host: "an app on this computer (" + scheme + ":)", Local: true, FormAction: scheme + ":"}
	}
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" || !cspHost(u.Host) {
		return redirectTarget{Host: "an unknown address", Local: true}
	}
	t := redirectTarget{Host: u.Host, FormAction: scheme + "://" + u.Host}
	if scheme == "http" {
		// ValidateRedirectURI allows http only on a loopback host.
		t.Host, t.Local = "an app on this computer", true
	}
	return t
}

// cspScheme: RFC 3986 scheme characters, so the source cannot end the
// directive (';'), start another source (' ') or quote.
func cspScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// cspHost: a host name, IPv4 or bracketed IPv6 address, with an optional
// port — nothing a CSP would read as another token.
func cspHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isLetter(c) && !isDigit(c) && strings.IndexByte(".-:[]", c) < 0 {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// redirectBack sends the browser to the client's checked redirect URI with
// params (an authorization response, RFC 6749 §4.1.2, with iss per RFC
// 9207). A query the URI has already is kept as it is (§3.1.2). The status
// is 302 for the GET of the authorization request and 303 after a form's
// POST, so that the browser follows with GET.
func redirectBack(w http.ResponseWriter, r *http.Request, redirectURI string, params url.Values) {
	sep := "?"
	if strings.Contains(redirectURI, "?") {
		sep = "&"
	}
	hd := w.Header()
	hd.Set("Location", redirectURI+sep+params.Encode())
	// The code is in the Location: no cache may keep this answer.
	hd.Set("Cache-Control", "no-store")
	status := http.StatusSeeOther
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		status = http.StatusFound
	}
	w.WriteHeader(status)
}

// errorDescription makes msg fit error_description, whose characters RFC
// 6749 §4.1.2.1 limits to printable ASCII without '"' and '\'.
func errorDescription(msg string) string {
	msg = strings.NewReplacer("§", "section ", "—", "-", "…", "...").Replace(msg)
	return strings.Map(func(c rune) rune {
		switch {
		case c == '"' || c == '\\':
			return '\''
		case c < 0x20 || c > 0x7e:
			return '?'
		}
		return c
	}, msg)
}
