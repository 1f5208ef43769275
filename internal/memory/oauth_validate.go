package memory

import (
	"encoding/base64"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Validation of OAuth input (issue 25): pure functions the OAuth transport
// and the service call on what a client sends to /register,
// /authorize and /token. Each refusal is CodeInvalid and carries
// the OAuth error name the response must use (OAuthErrorCode), because one
// rule answers with different names at different endpoints: a bad scope is
// invalid_scope at /authorize but invalid_client_metadata in a registration.

// OAuth limits.
const (
	// OAuthMaxRedirectURI is the limit of one redirect URI in bytes; longer
	// ones are refused at registration, before anything is stored or shown.
	OAuthMaxRedirectURI = 2048
	// OAuthMaxRedirectURIs is the most redirect URIs one client registers.
	OAuthMaxRedirectURIs = 16
	// OAuthMaxClientName is the limit of a client's name in characters; it
	// is shown on the consent page and in the audit log.
	OAuthMaxClientName = 200
	// OAuthMaxScopes is the most scope tokens one request may name, and
	// OAuthMaxScope the limit of the whole scope parameter in bytes.
	OAuthMaxScopes = 16
	OAuthMaxScope  = 1024
)

// The scopes Munin knows. A token acts as the keys signed in with, so there
// is one scope; offline_access is accepted and ignored (refresh tokens go
// to every client whose grant types include refresh_token).
const (
	OAuthScopeMemory        = "memory"
	OAuthScopeOfflineAccess = "offline_access"
)

// OAuthError is the error name of an OAuth error response ("error":
// "invalid_scope"). It travels as the cause (Err) of a memory *Error, so the
// message and code stay Munin's and the transport finds the name with
// OAuthErrorCode; errors.Is(err, OAuthInvalidScope) works too.
type OAuthError string

// Error makes an OAuthError usable as an error cause.
func (o OAuthError) Error() string { return string(o) }

// The OAuth error names used here (RFC 6749 §4.1.2.1 and §5.2, RFC 7591
// §3.2.2, RFC 8707 §2), and the two the token endpoint needs beside them.
const (
	OAuthInvalidRequest        OAuthError = "invalid_request"
	OAuthInvalidScope          OAuthError = "invalid_scope"
	OAuthInvalidTarget         OAuthError = "invalid_target"
	OAuthInvalidGrant          OAuthError = "invalid_grant"
	OAuthInvalidClient         OAuthError = "invalid_client"
	OAuthInvalidRedirectURI    OAuthError = "invalid_redirect_uri"
	OAuthInvalidClientMetadata OAuthError = "invalid_client_metadata"
)

// OAuthErrorf builds a client-facing error with code and the OAuth error
// name the response carries.
func OAuthErrorf(code Code, name OAuthError, format string, args ...any) *Error {
	e := Errorf(code, format, args...)
	e.Err = name
	return e
}

// OAuthErrorCode returns the OAuth error name for err: the OAuthError in its
// chain; else invalid_request for an invalid or too_large error,
// server_error for an internal one, temporarily_unavailable for
// unavailable; else "" (nil, or a code whose name depends on the endpoint,
// such as unauthorized, which the caller maps).
func OAuthErrorCode(err error) string {
	var name OAuthError
	if errors.As(err, &name) {
		return string(name)
	}
	switch ErrorCode(err) {
	case CodeInvalid, CodeTooLarge:
		return string(OAuthInvalidRequest)
	case CodeInternal:
		return "server_error"
	case CodeUnavailable:
		return "temporarily_unavailable"
	}
	return ""
}

// knownNativeRedirects are redirect URIs of real clients that break the
// reverse-domain rule of RFC 8252 §7.1, accepted exactly and nothing else
// of their scheme. Cursor registers cursor://anysphere.cursor-mcp/oauth/callback
// by DCR (cursor.com/docs/mcp, as quoted by its integrators), and refusing
// one URI refuses its whole registration. An exact entry, not the scheme:
// other cursor:// URIs are Cursor's deep links (cursor://anysphere.cursor-deeplink/mcp/install
// installs a server), and a redirect must never open one.
var knownNativeRedirects = []string{"cursor://anysphere.cursor-mcp/oauth/callback"}

// ValidateRedirectURI checks a redirect URI a client registers (RFC 7591
// §2, by DCR, CIMD or configuration). It enforces: an absolute URI of at
// most OAuthMaxRedirectURI bytes of RFC 3986 characters, well-formed
// percent-encoding, no fragment (RFC 6749 §3.1.2); and one of
//   - https with a host name or IP literal (OAuth 2.1 §1.5, MCP "redirect
//     URIs MUST be either localhost or use HTTPS");
//   - http on a loopback host: 127.0.0.1, [::1] or localhost (RFC 8252
//     §7.3, OAuth 2.1 §8.4.2), in those spellings only;
//   - a private-use scheme in reverse-domain form, which contains a '.'
//     (RFC 8252 §7.1 and §8.4: schemes without one SHOULD be rejected),
//     or one of the exact knownNativeRedirects. MCP 2025-11-25 names only
//     localhost and https, but native clients register such schemes, and
//     PKCE keeps a code caught by another app useless (RFC 8252 §8.1).
//
// http and https URIs may carry no user info and no percent-encoding in the
// host, and no '.' or '..' path segment: the consent page shows the host,
// which must be the host the browser goes to. javascript:, data:, file:
// and every other scheme are refused.
func ValidateRedirectURI(uri string) error {
	bad := func(format string, args ...any) error {
		return OAuthErrorf(CodeInvalid, OAuthInvalidRedirectURI, "redirect URI "+format, args...)
	}
	if err := checkURIText(uri, OAuthMaxRedirectURI, bad); err != nil {
		return err
	}
	if strings.IndexByte(uri, '#') >= 0 {
		return bad("%q has a fragment: a redirect URI must not (RFC 6749 §3.1.2)", uri)
	}
	scheme, rest, ok := cutScheme(uri)
	if !ok {
		return bad("%q is not an absolute URI: it has no scheme", uri)
	}
	if slices.Contains(knownNativeRedirects, uri) {
		return nil
	}
	switch s := strings.ToLower(scheme); {
	case s == "https" || s == "http":
		host, _, tail, problem := webAuthority(rest)
		if problem != "" {
			return bad("%q: %s", uri, problem)
		}
		if s == "http" && !loopbackHost(host) {
			return bad("%q uses http on host %q: http is allowed only on a loopback host (127.0.0.1, [::1] or localhost, RFC 8252 §7.3); use https", uri, host)
		}
		if dotSegment(tail) {
			return bad("%q has a '.' or '..' path segment", uri)
		}
	case s == "javascript" || s == "data" || s == "file" || s == "vbscript" || s == "blob" || s == "about":
		return bad("%q: the scheme %s: is never a redirect target", uri, scheme)
	case strings.Contains(s, "."):
		if slices.Contains(strings.Split(s, "."), "") {
			return bad("%q: the private-use scheme %q has an empty label; use reverse-domain form such as com.example.app (RFC 8252 §7.1)", uri, scheme)
		}
		if rest == "" {
			return bad("%q has nothing after its scheme", uri)
		}
	default:
		return bad("%q: the scheme %q is not allowed; use https, http on a loopback host, or a private-use scheme in reverse-domain form such as com.example.app:/callback (RFC 8252 §7.1)", uri, scheme)
	}
	return nil
}

// MatchRedirectURI finds the redirect URI of an authorization request among
// the client's registered ones and returns the entry matched. Matching is
// by exact string (OAuth 2.1 §4.1.1, MCP "exact redirect URIs"), with one
// exception: for http on a loopback host (127.0.0.1, [::1], localhost) the
// port may differ, or be absent on either side, because a native app gets
// its port from the system at run time (RFC 8252 §7.3, OAuth 2.1 §8.4.2).
// Scheme, host, path and query must still be equal as strings: nothing is
// case-folded, decoded or given a trailing slash. An empty got matches
// nothing: whether a request may omit redirect_uri (OAuth 2.1 §4.1.1, one
// registered URI) is the caller's rule.
func MatchRedirectURI(registered []string, got string) (string, bool) {
	if got == "" {
		return "", false
	}
	if slices.Contains(registered, got) {
		return got, true
	}
	gotBase, gotRest, ok := splitLoopback(got)
	if !ok {
		return "", false
	}
	for _, r := range registered {
		if base, rest, ok := splitLoopback(r); ok && base == gotBase && rest == gotRest {
			return r, true
		}
	}
	return "", false
}

// splitLoopback splits an http loopback URI into "http://host" and what
// follows the port (path and query), dropping the port. ok is false for
// anything else, including a port that is not 1-65535 in digits, user
// info, a fragment, or a host spelt otherwise than loopbackHost allows.
func splitLoopback(s string) (base, rest string, ok bool) {
	const scheme = "http://"
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) || strings.IndexByte(s, '#') >= 0 {
		return "", "", false
	}
	auth := s[len(scheme):]
	if i := strings.IndexAny(auth, "/?"); i >= 0 {
		auth, rest = auth[:i], auth[i:]
	}
	host := auth
	if i := strings.LastIndexByte(auth, ':'); i >= 0 && !strings.HasSuffix(auth, "]") {
		if !validPort(auth[i+1:]) {
			return "", "", false
		}
		host = auth[:i]
	}
	if !loopbackHost(host) {
		return "", "", false
	}
	return s[:len(scheme)] + host, rest, true
}

// loopbackHost: the three spellings RFC 8252 §7.3 and OAuth 2.1 §8.4.2
// name, ignoring case. Other loopback forms (127.0.0.2, 127.1, [::ffff:127.0.0.1],
// "localhost.") are refused rather than normalised: matching stays a string
// comparison.
func loopbackHost(host string) bool {
	h := strings.ToLower(host)
	return h == "127.0.0.1" || h == "[::1]" || h == "localhost"
}

// validPort: 1-65535 in decimal digits without a leading zero.
func validPort(p string) bool {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(p)
	return n <= 65535
}

// checkURIText checks what every URI here must be: 1 to max bytes of the
// characters RFC 3986 allows (unreserved, reserved and '%'), with each '%'
// followed by two hex digits. That refuses spaces, control characters
// (which browsers strip, so the URI they follow is not the one checked),
// '\' (which browsers read as '/'), and raw non-ASCII (IRIs, homographs).
func checkURIText(s string, max int, bad func(string, ...any) error) error {
	if s == "" {
		return bad("is empty")
	}
	if len(s) > max {
		return bad("is %d bytes, the limit is %d", len(s), max)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c == 0x7f:
			return bad("contains a space or control character at byte %d", i)
		case c >= 0x80:
			return bad("contains a non-ASCII byte at byte %d: percent-encode it, and send a host name as punycode", i)
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return bad("has a '%%' at byte %d that is not followed by two hex digits", i)
			}
		case !isAlnum(c) && strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) < 0:
			return bad("contains %q at byte %d, which a URI may not contain (RFC 3986)", c, i)
		}
	}
	return nil
}

// cutScheme splits "scheme:rest" where scheme is ALPHA *( ALPHA / DIGIT /
// "+" / "-" / "." ) (RFC 3986 §3.1).
func cutScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || !isAlpha(s[0]) {
		return "", "", false
	}
	for j := 1; j < i; j++ {
		if c := s[j]; !isAlnum(c) && c != '+' && c != '-' && c != '.' {
			return "", "", false
		}
	}
	return s[:i], s[i+1:], true
}

// webAuthority reads the authority of an http(s) URI from what follows
// "scheme:" and returns its host (as written, with brackets for IPv6), port
// and what follows (path and query), or a reason it is refused: no "//" and
// host, user info, a percent-encoded or otherwise unusual host, a bad port.
func webAuthority(rest string) (host, port, tail, problem string) {
	if !strings.HasPrefix(rest, "//") {
		return "", "", "", "an http(s) URI needs // and a host"
	}
	auth := rest[2:]
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth, tail = auth[:i], auth[i:]
	}
	if strings.IndexByte(auth, '@') >= 0 {
		return "", "", "", "user info (before '@') is not allowed"
	}
	host = auth
	if i := strings.LastIndexByte(auth, ':'); i >= 0 && !strings.HasSuffix(auth, "]") {
		host, port = auth[:i], auth[i+1:]
		if !validPort(port) {
			return "", "", "", "the port must be 1-65535"
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		if a, err := netip.ParseAddr(host[1 : len(host)-1]); err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", "", "the host is not an IPv6 address"
		}
	} else if !dnsName(host) {
		return "", "", "", "the host must be a DNS name or an IP address (letters, digits, '-' and '.', no percent-encoding)"
	}
	return host, port, tail, ""
}

// dnsName: labels of 1-63 letters, digits and '-', at most 253 bytes, no
// empty label (so no trailing dot). An IPv4 literal passes.
func dnsName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !isAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}

// dotSegment reports a "." or ".." segment in the path of tail (path and
// query), also percent-encoded (%2e): browsers resolve them away.
func dotSegment(tail string) bool {
	path, _, _ := strings.Cut(tail, "?")
	path = strings.ReplaceAll(strings.ToLower(path), "%2e", ".")
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' }
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ValidatePKCE checks the PKCE parameters of an authorization request. PKCE
// is required (OAuth 2.1 §4.1.1), and the method must be exactly "S256":
// "plain" is refused (OAuth 2.1 §4.1.1 lets a server refuse it, and MCP
// clients MUST use S256), and so is a challenge without a method, which
// RFC 7636 §4.3 defines as plain. The challenge is BASE64URL(SHA256(verifier))
// (RFC 7636 §4.2): 43 characters of base64url without padding that decode
// to 32 bytes.
func ValidatePKCE(method, challenge string) error {
	bad := func(format string, args ...any) error {
		return OAuthErrorf(CodeInvalid, OAuthInvalidRequest, format, args...)
	}
	switch {
	case method == "" && challenge == "":
		return bad("PKCE is required: send code_challenge and code_challenge_method=S256 (OAuth 2.1 §4.1.1)")
	case method == "":
		return bad("code_challenge_method is missing, which means plain (RFC 7636 §4.3); only S256 is accepted")
	case method == "plain":
		return bad("code_challenge_method plain is not accepted; only S256")
	case method != "S256":
		return bad("code_challenge_method %q is not supported; only S256 (exactly)", clip(method, 32))
	case challenge == "":
		return bad("code_challenge is missing: PKCE is required (OAuth 2.1 §4.1.1)")
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(challenge); len(challenge) != 43 || err != nil || len(b) != 32 {
		return bad("code_challenge must be 43 characters of base64url without padding, the S256 hash of the verifier (RFC 7636 §4.2)")
	}
	return nil
}

// ValidateCodeVerifier checks a PKCE code verifier at the token endpoint:
// 43 to 128 characters of [A-Za-z0-9-._~] (RFC 7636 §4.1). The error never
// repeats the verifier. That it hashes to the challenge is the caller's
// (constant-time) check, answered with invalid_grant.
func ValidateCodeVerifier(v string) error {
	if len(v) < 43 || len(v) > 128 {
		return OAuthErrorf(CodeInvalid, OAuthInvalidRequest, "code_verifier must be 43-128 characters, got %d (RFC 7636 §4.1)", len(v))
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '-' && c != '.' && c != '_' && c != '~' {
			return OAuthErrorf(CodeInvalid, OAuthInvalidRequest, "code_verifier has a character outside [A-Za-z0-9-._~] at byte %d (RFC 7636 §4.1)", i)
		}
	}
	return nil
}

// ParseScope splits a scope parameter into its tokens (RFC 6749 §3.3):
// tokens of %x21 / %x23-5B / %x5D-7E separated by spaces, at most
// OAuthMaxScopes of them in at most OAuthMaxScope bytes. Repeated tokens
// are kept once, in first order (a scope is a set). Runs of spaces and
// leading or trailing spaces are tolerated, for clients that build the
// string carelessly. An empty (or all-space) scope gives an empty slice:
// the caller applies the default, since claude.ai and ChatGPT omit scope
// on reconnect. Which tokens are known is the caller's decision.
func ParseScope(s string) ([]string, error) {
	bad := func(format string, args ...any) error {
		return OAuthErrorf(CodeInvalid, OAuthInvalidScope, format, args...)
	}
	if len(s) > OAuthMaxScope {
		return nil, bad("scope is %d bytes, the limit is %d", len(s), OAuthMaxScope)
	}
	scopes := []string{}
	n := 0
	for tok := range strings.SplitSeq(s, " ") {
		if tok == "" {
			continue
		}
		if n++; n > OAuthMaxScopes {
			return nil, bad("scope names more than %d tokens", OAuthMaxScopes)
		}
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return nil, bad("scope token %q has a character outside RFC 6749 §3.3 (printable ASCII but '\"' and '\\') at byte %d", clip(tok, 64), i)
			}
		}
		if !slices.Contains(scopes, tok) {
			scopes = append(scopes, tok)
		}
	}
	return scopes, nil
}

// ParseResource checks the resource parameter of an authorization or token
// request (RFC 8707 §2): an absolute URI without fragment or user info that
// names this server, canonical (the resource of its protected-resource
// metadata, RFC 9728). Scheme and host compare ignoring case (MCP
// 2025-11-25 "Canonical Server URI": servers SHOULD accept uppercase), the
// scheme's default port equals no port, and an empty path equals "/" (RFC
// 3986 §6.2.3; a browser's URL.href turns https://h into https://h/). The
// path and query must be equal as strings: https://h/mcp/ is not
// https://h/mcp, the spec's canonical form has no trailing slash and
// clients send the metadata's resource as it stands. An empty resource is
// refused; a caller that lets a missing resource default to canonical
// (RFC 8707 allows that) checks for "" before calling.
func ParseResource(s, canonical string) error {
	bad := func(format string, args ...any) error {
		return OAuthErrorf(CodeInvalid, OAuthInvalidTarget, "resource "+format, args...)
	}
	want, ok := resourceKey(canonical)
	if !ok {
		return Internal(errors.New("the canonical resource URL " + strconv.Quote(canonical) + " is not an absolute http(s) URI"))
	}
	if err := checkURIText(s, OAuthMaxRedirectURI, bad); err != nil {
		return err
	}
	if strings.IndexByte(s, '#') >= 0 {
		return bad("%q has a fragment: a resource must not (RFC 8707 §2)", s)
	}
	got, ok := resourceKey(s)
	if !ok {
		return bad("%q must be an absolute http(s) URI with a host and no user info (RFC 8707 §2)", s)
	}
	if got != want {
		return bad("%q is not this server; its resource is %q", s, canonical)
	}
	return nil
}

// resourceKey is the comparable form of an http(s) resource URI: scheme and
// host lowercased, the default port dropped, an empty path made "/".
func resourceKey(s string) (string, bool) {
	scheme, rest, ok := cutScheme(s)
	if !ok {
		return "", false
	}
	scheme = strings.ToLower(scheme)
	if scheme != "https" && scheme != "http" {
		return "", false
	}
	host, port, tail, problem := webAuthority(rest)
	if problem != "" {
		return "", false
	}
	if port == "443" && scheme == "https" || port == "80" && scheme == "http" {
		port = ""
	}
	if tail == "" || tail[0] == '?' {
		tail = "/" + tail
	}
	key := scheme + "://" + strings.ToLower(host)
	if port != "" {
		key += ":" + port
	}
	return key + tail, true
}
