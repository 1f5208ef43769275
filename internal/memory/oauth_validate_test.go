package memory

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// checkOAuthErr fails unless err is nil exactly when ok, and a refusal is
// CodeInvalid with the OAuth error name want.
func checkOAuthErr(t *testing.T, call string, err error, ok bool, want OAuthError) {
	t.Helper()
	if (err == nil) != ok {
		t.Errorf("%s = %v, want ok=%v", call, err, ok)
		return
	}
	if err != nil && (ErrorCode(err) != CodeInvalid || OAuthErrorCode(err) != string(want)) {
		t.Errorf("%s: code %s, OAuth error %q, want invalid and %q (%v)", call, ErrorCode(err), OAuthErrorCode(err), want, err)
	}
}

func TestValidateRedirectURI(t *testing.T) {
	accepted := []string{
		"https://claude.ai/api/mcp/auth_callback",
		"https://claude.com/api/mcp/auth_callback",
		"https://chatgpt.com/connector_platform_oauth_redirect",
		"https://chatgpt.com/connector/oauth/abc123",
		"https://www.cursor.com/agents/mcp/oauth/callback",
		"cursor://anysphere.cursor-mcp/oauth/callback", // the one exact dotless exception
		"https://vscode.dev/redirect",
		"http://127.0.0.1/callback",
		"http://127.0.0.1:33418/callback",
		"http://localhost:8787/callback",
		"http://[::1]:8080/cb",
		"http://[::1]/cb",
		"HTTPS://Claude.AI/api/mcp/auth_callback",
		"HTTP://LOCALHOST:3000/cb",
		"https://example.com/cb?x=1&y=%2F",
		"https://example.com:8443/cb",
		"https://example.com",
		"https://example.com/a%20b",
		"https://[2001:db8::1]/cb",
		"https://192.0.2.1/cb",
		"com.example.app:/oauth2redirect/example-provider",
		"com.example.app://callback",
		"https://a.example/" + strings.Repeat("x", OAuthMaxRedirectURI-len("https://a.example/")),
	}
	refused := []string{
		"",
		"javascript:alert(1)",
		"JavaScript:alert(1)",
		"data:text/html;base64,PHNjcmlwdD4=",
		"data:text/html,<script>alert(1)</script>",
		"file:///etc/passwd",
		"vbscript:msgbox",
		"about:blank",
		"ftp://example.com/cb",
		"ws://localhost/cb",
		"cursor://anysphere.cursor-retrieval/oauth/callback",
		"cursor://anysphere.cursor-deeplink/mcp/install?name=x",
		"cursor://anysphere.cursor-mcp/oauth/callback?x=1",
		"CURSOR://anysphere.cursor-mcp/oauth/callback",
		"grokbot://mcp/oauth/callback",
		"myapp:/cb",
		"com..example:/cb",
		"com.example.:/cb",
		".com.example:/cb",
		"com.example.app:",
		"http://127.0.0.1.evil.com/cb",
		"http://localhost@evil.com/",
		"http://localhost.evil.com/cb",
		"http://evil.com/cb",
		"http://127.0.0.2/cb",
		"http://127.1/cb",
		"http://[::ffff:127.0.0.1]/cb",
		"http://[0:0:0:0:0:0:0:1]/cb",
		"http://localhost./cb",
		"http://0x7f000001/cb",
		"http://2130706433/cb",
		"http://localhos%74/cb",
		"http://127.0.0.1%2eevil.com/cb",
		"https://claude.ai@evil.com/cb",
		"https://claude.ai%2f@evil.com/",
		"https://evil.com\\@claude.ai/cb",
		"https://claude.ai/cb#frag",
		"https://claude.ai/cb#",
		"https://claude.ai/api/../../evil",
		"https://claude.ai/api/%2e%2E/evil",
		"https://claude.ai/./cb",
		"https://claude.ai/cb x",
		"https://claude.ai/c\tb",
		"https://claude.ai/c\nb",
		"https://claude.ai/c\x00b",
		"https://claude.ai/c\x7fb",
		"https://cläude.ai/cb",
		"https://claude.ai/%zz",
		"https://claude.ai/%2",
		"https://claude.ai/<script>",
		"https://claude.ai/cb|x",
		"https:claude.ai/cb",
		"https:///cb",
		"https://claude.ai:0/cb",
		"https://claude.ai:65536/cb",
		"https://claude.ai:/cb",
		"https://claude.ai:8o/cb",
		"https://claude.ai:0443/cb",
		"https://-evil.com/cb",
		"https://claude.ai./cb",
		"https://cla_ude.ai/cb",
		"https://[fe80::1%25en0]/cb",
		"https://[127.0.0.1]/cb",
		"//claude.ai/cb",
		"/cb",
		"claude.ai/cb",
		"https://a.example/" + strings.Repeat("x", OAuthMaxRedirectURI-len("https://a.example/")+1),
	}
	for _, uri := range accepted {
		checkOAuthErr(t, fmt.Sprintf("ValidateRedirectURI(%q)", uri), ValidateRedirectURI(uri), true, "")
	}
	for _, uri := range refused {
		checkOAuthErr(t, fmt.Sprintf("ValidateRedirectURI(%q)", uri), ValidateRedirectURI(uri), false, OAuthInvalidRedirectURI)
	}
	// The error names the rule broken, not just some rule.
	for _, tc := range []struct{ uri, says string }{
		{"http://evil.com/cb", "loopback"},
		{"https://claude.ai@evil.com/cb", "user info"},
		{"http://localhost@evil.com/", "user info"},
		{"https://claude.ai/cb x", "space or control"},
		{"https://claude.ai/c\x7fb", "space or control"},
		{"https://claude.ai/api/../evil", "'..' path segment"},
		{"https://claude.ai/cb#", "fragment"},
		{"myapp:/cb", "reverse-domain"},
		{"javascript:alert(1)", "never a redirect target"},
		{"https://cläude.ai/cb", "non-ASCII"},
	} {
		if err := ValidateRedirectURI(tc.uri); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ValidateRedirectURI(%q) = %v, want it to say %q", tc.uri, err, tc.says)
		}
	}
}

var testRegistered = []string{
	"https://claude.ai/api/mcp/auth_callback",
	"http://127.0.0.1/callback",
	"http://[::1]:8080/cb",
	"http://localhost:8787/callback",
	"com.example.app:/cb",
	"cursor://anysphere.cursor-mcp/oauth/callback",
	"http://127.0.0.1:5000/q?x=1",
}

func TestMatchRedirectURI(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{"https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback"},
		{"https://claude.ai/api/mcp/auth_callback/", ""},
		{"https://CLAUDE.ai/api/mcp/auth_callback", ""},
		{"https://claude.ai/API/mcp/auth_callback", ""},
		{"https://claude.ai:443/api/mcp/auth_callback", ""},
		{"https://claude.ai/api/mcp/auth_callback?x=1", ""},
		{"https://claude.ai/api/mcp/auth_callback#x", ""},
		{"https://claude.ai/api/mcp/auth%5Fcallback", ""},
		{"http://127.0.0.1/callback", "http://127.0.0.1/callback"},
		{"http://127.0.0.1:54321/callback", "http://127.0.0.1/callback"},
		{"http://127.0.0.1:54321/callback/", ""},
		{"http://127.0.0.1:54321/Callback", ""},
		{"http://127.0.0.1:54321/callback?x", ""},
		{"http://127.0.0.1:54321/callback#x", ""},
		{"http://127.0.0.1:54321/callback\t", ""},
		{"http://127.0.0.1:0/callback", ""},
		{"http://127.0.0.1:65536/callback", ""},
		{"http://127.0.0.1:/callback", ""},
		{"http://127.0.0.1:080/callback", ""},
		{"http://127.0.0.1:54321@evil.com/callback", ""},
		{"http://127.0.0.1.evil.com:5/callback", ""},
		{"http://localhost@127.0.0.1:5/callback", ""},
		{"HTTP://127.0.0.1:5/callback", ""},
		{"https://127.0.0.1:5/callback", ""},
		{"http://localhost:1234/callback", "http://localhost:8787/callback"},
		{"http://localhost/callback", "http://localhost:8787/callback"},
		{"http://LOCALHOST:1234/callback", ""},
		{"http://[::1]:9/cb", "http://[::1]:8080/cb"},
		{"http://[::1]/cb", "http://[::1]:8080/cb"},
		{"http://[::1]:9/callback", ""},
		{"http://127.0.0.1:5/q?x=1", "http://127.0.0.1:5000/q?x=1"},
		{"http://127.0.0.1:5/q?x=2", ""},
		{"com.example.app:/cb", "com.example.app:/cb"},
		{"com.example.app:/cb/", ""},
		{"COM.example.app:/cb", ""},
		{"cursor://anysphere.cursor-mcp/oauth/callback", "cursor://anysphere.cursor-mcp/oauth/callback"},
		{"", ""},
	} {
		got, ok := MatchRedirectURI(testRegistered, tc.got)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("MatchRedirectURI(%q) = %q, %v; want %q", tc.got, got, ok, tc.want)
		}
	}
	if got, ok := MatchRedirectURI(nil, "http://127.0.0.1/callback"); ok {
		t.Errorf("nothing registered matched %q", got)
	}
	// VS Code registers these by DCR and, when port 33418 is taken, sends
	// another port at /authorize (microsoft/vscode#278512).
	vscode := []string{"https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect", "http://127.0.0.1/", "http://127.0.0.1:33418/"}
	for got, want := range map[string]string{"http://127.0.0.1:59656/": "http://127.0.0.1/", "http://127.0.0.1:33418/": "http://127.0.0.1:33418/", "http://127.0.0.1:59656": ""} {
		if m, ok := MatchRedirectURI(vscode, got); m != want || ok != (want != "") {
			t.Errorf("VS Code: MatchRedirectURI(%q) = %q, %v; want %q", got, m, ok, want)
		}
	}
	if got, ok := MatchRedirectURI([]string{""}, ""); ok {
		t.Errorf("an empty redirect URI matched %q", got)
	}
}

// loopbackPort finds the port of an http loopback URI, for the fuzz
// target's independent check of the port exception.
var loopbackPort = regexp.MustCompile(`^(?i:http://(?:127\.0\.0\.1|\[::1\]|localhost))(:[0-9]*)?`)

// FuzzMatchRedirectURI: a match is always one of the registered entries;
// an exact entry (but "") is always found; and a URI matches an entry other than
// itself only when both are http loopback URIs that differ in nothing but
// the port (RFC 8252 §7.3), as net/url also reads them.
func FuzzMatchRedirectURI(f *testing.F) {
	for _, s := range [][3]string{
		{"https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1/callback", "http://127.0.0.1:5/callback"},
		{"http://[::1]:8080/cb", "http://localhost/cb", "http://[::1]/cb"},
		{"http://localhost/cb", "https://localhost/cb", "https://localhost:5/cb"},
		{"http://127.0.0.1/cb", "", "http://127.0.0.1:5@evil.com/cb"},
		{"http://127.0.0.1/cb", "", "http://127.0.0.1.evil.com/cb"},
		{"http://127.0.0.1.evil.com/cb", "", "http://127.0.0.1.evil.com:5/cb"},
		{"http://localhost.evil.com:1/cb", "http://[::1]x/cb", "http://[::1]x:2/cb"},
		{"http://LOCALHOST/cb", "", "http://LOCALHOST:1/cb"},
		{"http://127.0.0.1/cb#x", "", "http://127.0.0.1:5/cb#x"},
		{"http://127.0.0.1:1/", "http://127.0.0.1:2/", "http://127.0.0.1:3/"},
		{"com.example.app:/cb", "cursor://anysphere.cursor-mcp/oauth/callback", "com.example.app:/cb/"},
		{"http://127.0.0.1/q?x=1", "", "http://127.0.0.1:8/q?x=1"},
		{"http://127.0.0.1", "", "http://127.0.0.1:9"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, got string) {
		registered := []string{a, b}
		m, ok := MatchRedirectURI(registered, got)
		if !ok {
			if got != "" && slices.Contains(registered, got) {
				t.Fatalf("%q is registered but did not match", got)
			}
			return
		}
		if !slices.Contains(registered, m) {
			t.Fatalf("MatchRedirectURI(%q, %q) = %q, which is not registered", registered, got, m)
		}
		if m == got {
			return
		}
		strip := func(s string) string {
			loc := loopbackPort.FindStringSubmatchIndex(s)
			if loc == nil {
				t.Fatalf("%q matched %q but is no http loopback URI", got, m)
			}
			if loc[2] < 0 {
				return s
			}
			return s[:loc[2]] + s[loc[3]:]
		}
		if strip(got) != strip(m) || strings.Contains(got, "#") {
			t.Fatalf("%q matched %q but they differ beyond the port", got, m)
		}
		gu, err1 := url.Parse(got)
		mu, err2 := url.Parse(m)
		if err1 != nil || err2 != nil || gu.Scheme != "http" || gu.User != nil ||
			!slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, strings.ToLower(gu.Hostname())) ||
			gu.Hostname() != mu.Hostname() || gu.EscapedPath() != mu.EscapedPath() || gu.RawQuery != mu.RawQuery {
			t.Fatalf("%q matched %q, but net/url reads them as different or non-loopback", got, m)
		}
	})
}

func TestValidatePKCE(t *testing.T) {
	sum := sha256.Sum256([]byte(strings.Repeat("v", 43)))
	good := base64.RawURLEncoding.EncodeToString(sum[:])
	for _, tc := range []struct {
		method, challenge string
		ok                bool
		says              string
	}{
		{"S256", good, true, ""},
		{"S256", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", true, ""},
		{"", "", false, "PKCE is required"},
		{"", good, false, "means plain"},
		{"plain", good, false, "plain is not accepted"},
		{"plain", "", false, "plain is not accepted"},
		{"s256", good, false, "only S256"},
		{"S256 ", good, false, "only S256"},
		{"SHA256", good, false, "only S256"},
		{"S256", "", false, "code_challenge is missing"},
		{"S256", good + "=", false, "43 characters"},
		{"S256", good[:42], false, "43 characters"},
		{"S256", good[:42] + "+", false, "43 characters"},
		{"S256", good[:42] + "/", false, "43 characters"},
		{"S256", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN", false, "43 characters"}, // padding bits set
		{"S256", strings.Repeat("A", 128), false, "43 characters"},
		{"S256", strings.Repeat("~", 43), false, "43 characters"},
	} {
		err := ValidatePKCE(tc.method, tc.challenge)
		checkOAuthErr(t, fmt.Sprintf("ValidatePKCE(%q, %q)", tc.method, tc.challenge), err, tc.ok, OAuthInvalidRequest)
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ValidatePKCE(%q, %q) = %v, want it to say %q", tc.method, tc.challenge, err, tc.says)
		}
	}
}

func TestValidateCodeVerifier(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{strings.Repeat("a", 43), true},
		{strings.Repeat("Z9", 64), true},
		{"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ-._~0123456789", true},
		{strings.Repeat("a", 42), false},
		{strings.Repeat("a", 129), false},
		{"", false},
		{strings.Repeat("a", 42) + "+", false},
		{strings.Repeat("a", 42) + "/", false},
		{strings.Repeat("a", 42) + "=", false},
		{strings.Repeat("a", 42) + " ", false},
		{strings.Repeat("a", 42) + "%", false},
		{strings.Repeat("a", 41) + "é", false},
	} {
		err := ValidateCodeVerifier(tc.v)
		checkOAuthErr(t, fmt.Sprintf("ValidateCodeVerifier(%q)", tc.v), err, tc.ok, OAuthInvalidRequest)
		if err != nil && tc.v != "" && strings.Contains(err.Error(), tc.v) {
			t.Errorf("ValidateCodeVerifier's error repeats the verifier: %v", err)
		}
	}
}

func TestParseScope(t *testing.T) {
	many := func(n int) string {
		var toks []string
		for i := range n {
			toks = append(toks, fmt.Sprintf("s%d", i))
		}
		return strings.Join(toks, " ")
	}
	for _, tc := range []struct {
		in   string
		want []string // nil: refused
	}{
		{"", []string{}},
		{"   ", []string{}},
		{"memory", []string{"memory"}},
		{"memory offline_access", []string{"memory", "offline_access"}},
		{"offline_access memory memory", []string{"offline_access", "memory"}},
		{"  memory   offline_access ", []string{"memory", "offline_access"}},
		{"!#[]~ a:b/c", []string{"!#[]~", "a:b/c"}},
		{many(OAuthMaxScopes), strings.Fields(many(OAuthMaxScopes))},
		{many(OAuthMaxScopes + 1), nil},
		{strings.TrimSpace(strings.Repeat("a ", OAuthMaxScopes+1)), nil},
		{strings.Repeat("a", OAuthMaxScope+1), nil},
		{`mem"ory`, nil},
		{`mem\ory`, nil},
		{"memory\toffline_access", nil},
		{"memory\n", nil},
		{"mémoire", nil},
		{"memory\x7f", nil},
	} {
		got, err := ParseScope(tc.in)
		checkOAuthErr(t, fmt.Sprintf("ParseScope(%q)", tc.in), err, tc.want != nil, OAuthInvalidScope)
		if tc.want != nil && (got == nil || !slices.Equal(got, tc.want)) {
			t.Errorf("ParseScope(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestParseResource(t *testing.T) {
	const mcp = "https://munin.example.com/mcp"
	for _, tc := range []struct {
		s, canonical string
		ok           bool
	}{
		{mcp, mcp, true},
		{"HTTPS://MUNIN.Example.COM/mcp", mcp, true},
		{"https://munin.example.com:443/mcp", mcp, true},
		{mcp, "https://munin.example.com:443/mcp", true},
		{"https://munin.example.com/", "https://munin.example.com", true},
		{"https://munin.example.com", "https://munin.example.com/", true},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp", true},
		{"https://munin.example.com/munin/mcp", "https://munin.example.com/munin/mcp", true},
		{"", mcp, false},
		{"https://munin.example.com/mcp/", mcp, false},
		{"https://munin.example.com/MCP", mcp, false},
		{"https://munin.example.com/m%63p", mcp, false},
		{"https://munin.example.com/mcp#x", mcp, false},
		{"https://munin.example.com/mcp#", mcp, false},
		{"https://munin.example.com/mcp?x=1", mcp, false},
		{"https://munin.example.com/mcp/../mcp", mcp, false},
		{"https://munin.example.com", mcp, false},
		{"https://munin.example.com/", mcp, false},
		{"https://munin.example.com/api/v1", mcp, false},
		{"http://munin.example.com/mcp", mcp, false},
		{"https://munin.example.com:8443/mcp", mcp, false},
		{"https://evil.example.com/mcp", mcp, false},
		{"https://munin.example.com.evil.com/mcp", mcp, false},
		{"https://user@munin.example.com/mcp", mcp, false},
		{"https://munin.example.com/mcp x", mcp, false},
		{"munin.example.com/mcp", mcp, false},
		{"/mcp", mcp, false},
		{"urn:munin:mcp", mcp, false},
		{"https://munin.example.com/mcp", "https://munin.example.com", false},
		{"http://localhost:8080/mcp", "http://127.0.0.1:8080/mcp", false},
	} {
		checkOAuthErr(t, fmt.Sprintf("ParseResource(%q, %q)", tc.s, tc.canonical), ParseResource(tc.s, tc.canonical), tc.ok, OAuthInvalidTarget)
	}
	if err := ParseResource(mcp+"#x", mcp); err == nil || !strings.Contains(err.Error(), "fragment") {
		t.Errorf("a resource with a fragment should be refused naming it, got %v", err)
	}
	if err := ParseResource(mcp, "munin.example.com"); ErrorCode(err) != CodeInternal {
		t.Errorf("a malformed canonical URL is a server fault, got %v", err)
	}
}

func TestOAuthErrorCode(t *testing.T) {
	tagged := OAuthErrorf(CodeUnauthorized, OAuthInvalidGrant, "code used twice")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{tagged, "invalid_grant"},
		{fmt.Errorf("token: %w", tagged), "invalid_grant"},
		{Errorf(CodeInvalid, "bad"), "invalid_request"},
		{Errorf(CodeTooLarge, "big"), "invalid_request"},
		{Internal(errors.New("disk")), "server_error"},
		{errors.New("plain"), "server_error"},
		{Errorf(CodeUnavailable, "busy"), "temporarily_unavailable"},
		{Errorf(CodeUnauthorized, "who"), ""},
	} {
		if got := OAuthErrorCode(tc.err); got != tc.want {
			t.Errorf("OAuthErrorCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if !errors.Is(tagged, OAuthInvalidGrant) || ErrorCode(tagged) != CodeUnauthorized || PublicMessage(tagged) != "unauthorized: code used twice" {
		t.Errorf("OAuthErrorf: %v (public %q)", tagged, PublicMessage(tagged))
	}
}
