package memory

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The grant types a client may register; Munin runs no other flow.
const (
	OAuthGrantAuthorizationCode = "authorization_code"
	OAuthGrantRefreshToken      = "refresh_token"
)

// ClientRegistration is what Munin keeps of a dynamic client registration
// request (RFC 7591, POST /register), checked. The service assigns
// the client's id and stores it as an OAuthClient of kind OAuthClientDCR.
type ClientRegistration struct {
	// Name is client_name, or when absent the host (else the scheme) of the
	// first redirect URI. Any client can claim any name, so the consent page
	// shows the redirect URI's host beside it (MCP 2025-11-25: MUST).
	Name string
	// RedirectURIs are the registered redirect URIs, each ValidateRedirectURI,
	// repeats dropped, in the order sent.
	RedirectURIs []string
	// GrantTypes is ["authorization_code"] or ["authorization_code",
	// "refresh_token"]; refresh tokens go only to the latter.
	GrantTypes []string
	// Scope is the scope the client asked to register (ParseScope); empty
	// when absent. The registration response may echo it.
	Scope []string
}

// ParseClientRegistration reads a client registration request (RFC 7591
// §3.1). body must be one JSON object with no member twice (CheckJSONText);
// member names match exactly, and unknown members are ignored (RFC 7591 §2).
// It enforces:
//   - redirect_uris: required, 1 to OAuthMaxRedirectURIs, each
//     ValidateRedirectURI (error invalid_redirect_uri);
//   - token_endpoint_auth_method: absent or "none". Munin registers public
//     clients only and issues no client secret by DCR, so absent means
//     "none" here, not RFC 7591's client_secret_basic;
//   - grant_types: absent (RFC 7591 §2: authorization_code) or a subset of
//     authorization_code and refresh_token that includes authorization_code;
//   - response_types: absent or ["code"] (RFC 7591 §2.1: the one response
//     type of authorization_code);
//   - application_type: absent, "web" or "native" (OpenID Connect DCR §2;
//     MCP clients send it). It is checked, not kept: Cursor registers
//     native and web redirect URIs in one request;
//   - client_name: at most OAuthMaxClientName characters on one line;
//   - scope: ParseScope.
//
// Everything else is invalid_client_metadata (RFC 7591 §3.2.2).
func ParseClientRegistration(body []byte) (ClientRegistration, error) {
	var reg ClientRegistration
	meta := func(format string, args ...any) error {
		return OAuthErrorf(CodeInvalid, OAuthInvalidClientMetadata, format, args...)
	}
	if err := CheckJSONText(body); err != nil {
		return reg, meta("%s", PublicText(err))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return reg, meta("the registration must be one JSON object (RFC 7591 §3.1)")
	}
	var uris, grants, responses []string
	var name, authMethod, appType, scope string
	for _, f := range []struct {
		name string
		v    any
	}{
		{"redirect_uris", &uris}, {"grant_types", &grants}, {"response_types", &responses},
		{"client_name", &name}, {"token_endpoint_auth_method", &authMethod},
		{"application_type", &appType}, {"scope", &scope},
	} {
		if raw, ok := fields[f.name]; ok && json.Unmarshal(raw, f.v) != nil {
			kind := "a string"
			if _, list := f.v.(*[]string); list {
				kind = "an array of strings"
			}
			return reg, meta("%s must be %s", f.name, kind)
		}
	}

	if len(uris) == 0 || len(uris) > OAuthMaxRedirectURIs {
		return reg, OAuthErrorf(CodeInvalid, OAuthInvalidRedirectURI, "redirect_uris must list 1-%d redirect URIs, got %d (RFC 7591 §2)", OAuthMaxRedirectURIs, len(uris))
	}
	for _, u := range uris {
		if err := ValidateRedirectURI(u); err != nil {
			return reg, err
		}
		if !slices.Contains(reg.RedirectURIs, u) {
			reg.RedirectURIs = append(reg.RedirectURIs, u)
		}
	}

	if authMethod != "" && authMethod != "none" {
		return reg, meta("token_endpoint_auth_method %q is not supported: Munin registers public clients only and issues no client secret by dynamic registration; send \"none\" (PKCE protects the code)", clip(authMethod, 64))
	}

	reg.GrantTypes = []string{OAuthGrantAuthorizationCode}
	if _, ok := fields["grant_types"]; ok && grants != nil {
		for _, g := range grants {
			if g != OAuthGrantAuthorizationCode && g != OAuthGrantRefreshToken {
				return reg, meta("grant type %q is not supported: only authorization_code and refresh_token", clip(g, 64))
			}
		}
		if !slices.Contains(grants, OAuthGrantAuthorizationCode) {
			return reg, meta("grant_types must include authorization_code, the only way to a token here")
		}
		if slices.Contains(grants, OAuthGrantRefreshToken) {
			reg.GrantTypes = append(reg.GrantTypes, OAuthGrantRefreshToken)
		}
	}

	if _, ok := fields["response_types"]; ok && responses != nil {
		if len(responses) == 0 || slices.ContainsFunc(responses, func(r string) bool { return r != "code" }) {
			return reg, meta(`response_types must be ["code"]: the authorization code flow is the only one`)
		}
	}

	if appType != "" && appType != "web" && appType != "native" {
		return reg, meta("application_type %q is not supported: web or native", clip(appType, 64))
	}

	parsed, err := ParseScope(scope)
	if err != nil {
		return reg, meta("%s", PublicText(err))
	}
	reg.Scope = parsed

	reg.Name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(reg.Name); n > OAuthMaxClientName {
		return reg, meta("client_name is %d characters, the limit is %d", n, OAuthMaxClientName)
	}
	if i := strings.IndexFunc(reg.Name, breaksLine); i >= 0 {
		r, _ := utf8.DecodeRuneInString(reg.Name[i:])
		return reg, meta("client_name contains %U: a name is one line without control or bidi characters", r)
	}
	if reg.Name == "" {
		reg.Name = redirectHost(reg.RedirectURIs[0])
	}
	return reg, nil
}

// redirectHost names a client by its redirect URI: the host of one with an
// authority (claude.ai, localhost), else its scheme (com.example.app).
func redirectHost(uri string) string {
	scheme, rest, _ := cutScheme(uri)
	auth, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return strings.ToLower(scheme)
	}
	if i := strings.IndexAny(auth, "/?"); i >= 0 {
		auth = auth[:i]
	}
	if i := strings.LastIndexByte(auth, ':'); i >= 0 && !strings.HasSuffix(auth, "]") {
		auth = auth[:i]
	}
	if auth == "" {
		return strings.ToLower(scheme)
	}
	return strings.ToLower(auth)
}
